# $1: ADDRESS:PORT outside the sandbox; tried with every proxy variable unset.
env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u all_proxy -u ALL_PROXY -u no_proxy -u NO_PROXY curl -sS -m 8 -o /dev/null -w 'drill: code=%{http_code}\n' "http://$1/"; echo "drill: exit=$?"
