# $1: the port the other run listens on; $2: its proxy's ADDRESS:PORT; then its addresses.
port=$1; peer_proxy=$2; shift 2
for a in "$@"; do
  env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u all_proxy -u ALL_PROXY -u no_proxy -u NO_PROXY curl -sS -m 8 -o /dev/null http://$a:$port/ 2>/dev/null; echo "drill: direct=$a direct-exit=$?"
  curl -sS -m 20 -o /dev/null -w "drill: proxied=$a proxied-code=%{http_code}\n" http://$a:$port/ 2>/dev/null; echo "drill: proxied-exit=$?"
done
env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u all_proxy -u ALL_PROXY -u no_proxy -u NO_PROXY curl -sS -m 8 -o /dev/null -x http://$peer_proxy http://$1:$port/ 2>/dev/null; echo "drill: peer-proxy=$peer_proxy peer-proxy-exit=$?"
echo "drill: done=yes"
