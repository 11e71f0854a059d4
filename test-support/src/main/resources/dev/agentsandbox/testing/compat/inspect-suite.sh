#!/bin/sh
# The client compatibility suite against inspected hosts (InspectCompatibilityIT): the run's proxy
# terminates TLS for web.test, pypi.test and git.test with its run CA, and every client must trust
# that CA through what the platform set (SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE,
# GIT_SSL_CAINFO, PIP_CERT, NODE_EXTRA_CA_CERTS, JDK_JAVA_OPTIONS) — nothing here names a CA. Each
# attempt prints "@@ <client> <cell> <attempt> <result>"; the test judges. Cells: "inspected" (an
# allowed request; its answer carries the upstream's token) and "refused-path" (a path the rules
# do not allow: the proxy answers 403). Busybox wget sends an https:// URL to a proxy as a plain
# GET of that URL, which the proxy refuses for every host (use CONNECT), so wget is tried over plain
# HTTP, where an inspected host's rules apply as well (and no credential is ever set).
#
# Environment (from the test): ASB_ROUNDS, ASB_TLS_PORT, ASB_HTTP_PORT, ASB_PROBE_JAVA,
# ASB_PROBE_NODE.
set -u
cd /tmp
umask 077
printf '%s' "$ASB_PROBE_JAVA" >/tmp/InspectProbe.java
printf '%s' "$ASB_PROBE_NODE" >/tmp/inspect-probe.js
unset ASB_PROBE_JAVA ASB_PROBE_NODE
R=$ASB_ROUNDS
OK=https://web.test:$ASB_TLS_PORT/hello
NO=https://web.test:$ASB_TLS_PORT/forbidden
PLAIN_OK=http://web.test:$ASB_HTTP_PORT/hello
PLAIN_NO=http://web.test:$ASB_HTTP_PORT/forbidden

line() { tr '\r\n' '  ' <"$1" | cut -c1-300; }
report() { printf '@@ %s %s %s %s\n' "$1" "$2" "$3" "$4"; }
curl_cell() {
  code=$(curl -sS --max-time 20 -o /tmp/out -w '%{http_code}' "$3" 2>/tmp/err)
  if [ "$code" = 000 ]; then report curl "$1" "$2" "error=$(line /tmp/err)"
  else report curl "$1" "$2" "status=$code body=$(line /tmp/out)"; fi
}
wget_cell() {
  if timeout 30 busybox wget -q -O /tmp/out "$3" 2>/tmp/err; then
    report wget "$1" "$2" "status=200 body=$(line /tmp/out)"
  else report wget "$1" "$2" "error=$(line /tmp/err)"; fi
}
py_cell() { # client cell attempt url
  timeout 60 python3 - "$1" "$4" >/tmp/out 2>&1 <<'PY'
import sys
client, url = sys.argv[1], sys.argv[2]
try:
    if client == "urllib":
        import urllib.error, urllib.request
        try:
            with urllib.request.urlopen(url, timeout=20) as a:
                print("status=%d body=%s" % (a.status, a.read().decode()[:200]))
        except urllib.error.HTTPError as e:
            print("status=%d body=%s" % (e.code, e.read().decode(errors="replace")[:200]))
    else:
        import requests
        a = requests.get(url, timeout=20)
        print("status=%d body=%s" % (a.status_code, a.text[:200]))
except Exception as e:
    print("error=%s: %s" % (type(e).__name__, " ".join(str(e).split())[:250]))
PY
  report "$1" "$2" "$3" "$(line /tmp/out)"
}
i=0
while [ $i -lt "$R" ]; do
  i=$((i + 1))
  curl_cell inspected $i "$OK"
  curl_cell refused-path $i "$NO"
  wget_cell inspected $i "$PLAIN_OK"
  wget_cell refused-path $i "$PLAIN_NO"
  py_cell urllib inspected $i "$OK"
  py_cell urllib refused-path $i "$NO"
  py_cell requests inspected $i "$OK"
  py_cell requests refused-path $i "$NO"
done
timeout 300 java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx128m /tmp/InspectProbe.java "$R" "$OK" "$NO"
NODE_PATH=/usr/share/nodejs timeout 300 node /tmp/inspect-probe.js "$R" "$OK" "$NO"
i=0
while [ $i -lt "$R" ]; do
  i=$((i + 1))
  rm -rf /tmp/site
  if timeout 60 python3 -m pip install --quiet --no-cache-dir --disable-pip-version-check \
    --retries 0 --timeout 20 --target /tmp/site --index-url "https://pypi.test:$ASB_TLS_PORT/simple/" \
    asb-compat-probe >/tmp/err 2>&1; then
    report pip inspected $i "installed=$(PYTHONPATH=/tmp/site python3 -c 'import asb_compat_probe as p; print(p.VALUE)' 2>&1 | cut -c1-300)"
  else report pip inspected $i "error=$(tail -n 3 /tmp/err | tr '\n' ' ' | cut -c1-300)"; fi
  rm -rf /tmp/clone
  if timeout 60 git clone --quiet "https://git.test:$ASB_TLS_PORT/repo.git" /tmp/clone >/tmp/err 2>&1; then
    report git inspected $i "cloned=$(head -c 300 /tmp/clone/README | tr '\n' ' ')"
  else report git inspected $i "error=$(line /tmp/err)"; fi
  rm -rf /tmp/clone
  if timeout 60 git clone --quiet "https://git.test:$ASB_TLS_PORT/other.git" /tmp/clone >/tmp/err 2>&1; then
    report git refused-path $i "cloned=$(head -c 300 /tmp/clone/README 2>/dev/null | tr '\n' ' ')"
  else report git refused-path $i "error=$(line /tmp/err)"; fi
done
echo "@@ suite done"
