echo "drill: uid=$(id -u)"
sed -n 's/^\(CapPrm\|CapEff\|CapAmb\|NoNewPrivs\):[[:space:]]*/drill: \1=/p' /proc/self/status | tr 'A-Z' 'a-z'
find / -xdev \( -perm -4000 -o -perm -2000 \) -type f 2>/dev/null | head -20 | sed 's/^/drill: setid=/'
chroot / true 2>/dev/null; echo "drill: chroot-exit=$?"
echo "drill: done=yes"
