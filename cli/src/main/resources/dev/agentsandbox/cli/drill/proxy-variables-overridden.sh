# $1: ADDRESS:PORT outside the sandbox, set as the proxy; $2: the host asked for through it.
proxy="http://$1"
export http_proxy="$proxy" https_proxy="$proxy" HTTP_PROXY="$proxy" HTTPS_PROXY="$proxy"
curl -sS -m 8 -o /dev/null -w 'drill: code=%{http_code}\n' "http://$2/"; echo "drill: exit=$?"
