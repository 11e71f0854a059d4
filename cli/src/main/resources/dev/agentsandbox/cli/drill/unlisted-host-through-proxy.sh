# $1: a host the agent's allow-list does not name; tried through the proxy, HTTPS then HTTP.
host=$1
curl -sS -m 20 -o /dev/null -w 'drill: https-code=%{http_code}\n' "https://$host/"; echo "drill: https-exit=$?"
curl -sS -m 20 -o /dev/null -w 'drill: http-code=%{http_code}\n' "http://$host/"; echo "drill: http-exit=$?"
