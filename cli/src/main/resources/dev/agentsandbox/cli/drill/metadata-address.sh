# $1: the metadata service's ADDRESS:PORT; tried directly, then through the proxy.
env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u all_proxy -u ALL_PROXY -u no_proxy -u NO_PROXY curl -sS -m 8 -o /dev/null -w 'drill: direct-code=%{http_code}\n' "http://$1/latest/meta-data/"; echo "drill: direct-exit=$?"
curl -sS -m 20 -o /dev/null -w 'drill: proxied-code=%{http_code}\n' "http://$1/latest/meta-data/"; echo "drill: proxied-exit=$?"
