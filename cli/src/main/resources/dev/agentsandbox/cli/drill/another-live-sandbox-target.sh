# $1: the port to listen on. Counts every connection it accepts (the handler writes to the
# script's output as descriptor 3: reopening it through /proc is refused where the output is a
# device only root may open, as in a microVM guest), checks the counting with one connection of
# its own, then prints its addresses and its proxy's.
port=$1
exec 3>&1
echo 'echo x >>/tmp/drill-peer-count; echo "drill: connection=$(wc -l </tmp/drill-peer-count)" >&3' >/tmp/drill-peer-seen
nc -ll -p "$port" -e sh /tmp/drill-peer-seen &
n=0; until netstat -ltn 2>/dev/null | grep -q ":$port "; do n=$((n+1)); [ $n -gt 300 ] && break; sleep 0.2; done
echo "drill: listening=$(netstat -ltn 2>/dev/null | grep -c ":$port ")"
env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u all_proxy -u ALL_PROXY -u no_proxy -u NO_PROXY curl -sS -m 5 -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null
n=0; until [ -s /tmp/drill-peer-count ]; do n=$((n+1)); [ $n -gt 100 ] && break; sleep 0.1; done
echo "drill: self-check=$(cat /tmp/drill-peer-count 2>/dev/null | wc -l)"
ip -4 addr show 2>/dev/null | awk '/inet / && $2 !~ /^127\./ {sub("/.*", "", $2); print "drill: address=" $2}'
p=${HTTP_PROXY#http://}; echo "drill: proxy=${p%/}"
echo "drill: ready=yes"
while :; do sleep 5; done
