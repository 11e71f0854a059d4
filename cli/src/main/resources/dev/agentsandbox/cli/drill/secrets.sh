# $@: the paths that must not exist inside.
for p in "$@"; do if [ -e "$p" ]; then echo "drill: present=$p"; else echo "drill: absent=$p"; fi; done
find / -xdev \( -name docker.sock -o -name containerd.sock -o -name admin-token -o -name 'store.db*' \) 2>/dev/null | head -20 | sed 's/^/drill: found=/'
ls -A /run/agent-sandbox/credentials 2>/dev/null | sed 's/^/drill: credential=/'
echo "drill: done=yes"
