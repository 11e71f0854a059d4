"""The suite's Python probe: urllib or requests, each attempt a fresh client, one line per attempt.

Usage: python3 probe.py urllib|requests ROUNDS. The proxy comes from the environment (both
libraries read http_proxy and https_proxy); the test's CA from SSL_CERT_FILE (urllib, through
OpenSSL's default paths) or REQUESTS_CA_BUNDLE (requests).
"""
import os
import sys
import urllib.error
import urllib.request

CLIENT = sys.argv[1]
ROUNDS = int(sys.argv[2])
IP = os.environ["ASB_IP"]
HTTP_PORT = os.environ["ASB_HTTP_PORT"]
TLS_PORT = os.environ["ASB_TLS_PORT"]


def one_line(text):
    return " ".join(str(text).split())[:300]


def fetch_urllib(url, direct):
    handlers = [urllib.request.ProxyHandler({})] if direct else []
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(url, timeout=20) as answer:
            return "status=%d body=%s" % (answer.status, one_line(answer.read().decode()))
    except urllib.error.HTTPError as e:
        return "status=%d body=%s" % (e.code, one_line(e.read().decode(errors="replace")))


def fetch_requests(url, direct):
    import requests

    with requests.Session() as session:
        if direct:
            session.trust_env = False
        answer = session.get(url, timeout=20)
        return "status=%d body=%s" % (answer.status_code, one_line(answer.text))


FETCH = {"urllib": fetch_urllib, "requests": fetch_requests}[CLIENT]
CELLS = [
    ("allowed", "http://web.test:%s/" % HTTP_PORT, False),
    ("allowed-tls", "https://web.test:%s/hello" % TLS_PORT, False),
    ("refused", "http://%s.refused.test:%s/" % (CLIENT, HTTP_PORT), False),
    ("by-ip", "http://%s:%s/" % (IP, HTTP_PORT), False),
    ("direct-ip", "http://%s:%s/" % (IP, HTTP_PORT), True),
]

for attempt in range(1, ROUNDS + 1):
    for cell, url, direct in CELLS:
        try:
            result = FETCH(url, direct)
        except Exception as e:  # every failure is a result the test judges
            result = "error=%s: %s" % (type(e).__name__, one_line(e))
        print("@@ %s %s %d %s" % (CLIENT, cell, attempt, result), flush=True)
