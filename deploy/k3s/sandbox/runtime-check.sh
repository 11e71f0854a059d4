first="$(dmesg 2>/dev/null | head -n 1)"
case "$first" in
  *'Starting gVisor'*) echo 'agent-sandbox runtime check: gVisor'; exit 0 ;;
esac
echo "agent-sandbox runtime check: this pod does not run under gVisor (its kernel log does not start with gVisor's banner; kernel $(uname -r)); the RuntimeClass's handler does not lead to runsc on this node" >&2
exit 86
