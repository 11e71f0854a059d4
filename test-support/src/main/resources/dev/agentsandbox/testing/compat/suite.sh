#!/bin/sh
# The client compatibility suite, run inside one sandbox (ClientCompatibilityIT for Docker,
# MicroVmClientCompatibilityIT for the microVM backend). Every attempt of every client prints one
# line "@@ <client> <cell> <attempt> <result>"; the test judges the results and counts the proxy's
# decisions. Nothing here decides whether a cell passed.
#
# Environment (from the test): ASB_ROUNDS, ASB_IP (the test upstream's address), ASB_HTTP_PORT
# (plain HTTP, web.test), ASB_TLS_PORT (HTTPS for web.test, pypi.test and git.test, a certificate
# from the test's own CA), ASB_CA (that CA, PEM), ASB_PROBE_JAVA, ASB_PROBE_NODE, ASB_PROBE_PYTHON
# (the probes' sources). The proxy variables are the sandbox's own.
set -u
cd /tmp
umask 077
printf '%s' "$ASB_CA" >/tmp/ca.pem
printf '%s' "$ASB_PROBE_JAVA" >/tmp/Probe.java
printf '%s' "$ASB_PROBE_NODE" >/tmp/probe.js
printf '%s' "$ASB_PROBE_PYTHON" >/tmp/probe.py
unset ASB_CA ASB_PROBE_JAVA ASB_PROBE_NODE ASB_PROBE_PYTHON
# Each tool trusts the test's CA the way a user would tell it to; none has verification turned off.
export CURL_CA_BUNDLE=/tmp/ca.pem SSL_CERT_FILE=/tmp/ca.pem REQUESTS_CA_BUNDLE=/tmp/ca.pem \
  NODE_EXTRA_CA_CERTS=/tmp/ca.pem PIP_CERT=/tmp/ca.pem GIT_SSL_CAINFO=/tmp/ca.pem ASB_CA_FILE=/tmp/ca.pem
R=$ASB_ROUNDS
WEB=http://web.test:$ASB_HTTP_PORT/
WEB_TLS=https://web.test:$ASB_TLS_PORT/hello
BY_IP=http://$ASB_IP:$ASB_HTTP_PORT/

# One line, at most 300 characters, of what a tool printed.
line() { tr '\r\n' '  ' <"$1" | cut -c1-300; }
report() { printf '@@ %s %s %s %s\n' "$1" "$2" "$3" "$4"; }
# Where the time goes: "@# <phase> <epoch seconds>" before each phase.
phase() { printf '@# %s %s\n' "$1" "$(date +%s)"; }
direct() { env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY "$@"; }

curl_cell() { # client cell attempt url [direct]
  code=$(${5:-} curl -sS --max-time 20 -o /tmp/out -w '%{http_code}' "$4" 2>/tmp/err)
  if [ "$code" = 000 ]; then report "$1" "$2" "$3" "error=$(line /tmp/err)"
  else report "$1" "$2" "$3" "status=$code body=$(line /tmp/out)"; fi
}
wget_cell() { # client cell attempt url [direct]
  # No -T: Debian's static busybox 1.35 dies of a segmentation fault with it (docs/reliability.md).
  if ${5:-} timeout 30 busybox wget -q -O /tmp/out "$4" 2>/tmp/err; then
    report "$1" "$2" "$3" "status=200 body=$(line /tmp/out)"
  else report "$1" "$2" "$3" "error=$(line /tmp/err)"; fi
}
phase curl-wget
i=0
while [ $i -lt "$R" ]; do
  i=$((i + 1))
  curl_cell curl allowed $i "$WEB"
  curl_cell curl allowed-tls $i "$WEB_TLS"
  curl_cell curl refused $i "http://curl.refused.test:$ASB_HTTP_PORT/"
  curl_cell curl by-ip $i "$BY_IP"
  curl_cell curl direct-ip $i "$BY_IP" direct
  wget_cell wget allowed $i "$WEB"
  wget_cell wget refused $i "http://wget.refused.test:$ASB_HTTP_PORT/"
  wget_cell wget by-ip $i "$BY_IP"
  wget_cell wget direct-ip $i "$BY_IP" direct
done

phase urllib
timeout 300 python3 /tmp/probe.py urllib "$R"
phase requests
timeout 300 python3 /tmp/probe.py requests "$R"
phase java
# The JDK runs the single-file program straight from source, as `java File.java` does.
timeout 300 java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx128m /tmp/Probe.java "$R"
phase node
NODE_PATH=/usr/share/nodejs timeout 300 node /tmp/probe.js "$R"

pip_cell() { # cell attempt index-url [direct]
  rm -rf /tmp/site
  if ${4:-} timeout 60 python3 -m pip install --quiet --no-cache-dir --disable-pip-version-check \
    --retries 0 --timeout 20 --target /tmp/site --index-url "$3" asb-compat-probe >/tmp/err 2>&1; then
    report pip "$1" "$2" "installed=$(PYTHONPATH=/tmp/site python3 -c 'import asb_compat_probe as p; print(p.VALUE)' 2>&1 | cut -c1-300)"
  else report pip "$1" "$2" "error=$(tail -n 3 /tmp/err | tr '\n' ' ' | cut -c1-300)"; fi
}
git_cell() { # cell attempt url [direct]
  rm -rf /tmp/clone
  if ${4:-} timeout 60 git clone --quiet "$3" /tmp/clone >/tmp/err 2>&1; then
    report git "$1" "$2" "cloned=$(head -c 300 /tmp/clone/README | tr '\n' ' ')"
  else report git "$1" "$2" "error=$(line /tmp/err)"; fi
}
phase pip-git
i=0
while [ $i -lt "$R" ]; do
  i=$((i + 1))
  pip_cell allowed $i "https://pypi.test:$ASB_TLS_PORT/simple/"
  pip_cell refused $i "https://pip.refused.test:$ASB_TLS_PORT/simple/"
  pip_cell by-ip $i "https://$ASB_IP:$ASB_TLS_PORT/simple/"
  pip_cell direct-ip $i "https://$ASB_IP:$ASB_TLS_PORT/simple/" direct
  git_cell allowed $i "https://git.test:$ASB_TLS_PORT/repo.git"
  git_cell refused $i "https://git.refused.test:$ASB_TLS_PORT/repo.git"
  git_cell by-ip $i "https://$ASB_IP:$ASB_TLS_PORT/repo.git"
  git_cell direct-ip $i "https://$ASB_IP:$ASB_TLS_PORT/repo.git" direct
done
phase end
echo "@@ suite done"
