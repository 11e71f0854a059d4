# $1: how many MiB one process holds (the agent's memory cap and more). tail holds its whole
# input when it has no newline; dd writes it in 1 MiB blocks.
echo "drill: memory-hog=starting"
dd if=/dev/zero bs=1048576 count="$1" 2>/dev/null | tail >/dev/null; echo "drill: hog-exit=$?"
