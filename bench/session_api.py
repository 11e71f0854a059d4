#!/usr/bin/env python3
"""Sessions through the real API of a real `serve` (Docker backend), beside the Docker CLI.

Driven by bench/session-api-bench.sh, which starts `agent-sandbox serve` on loopback and passes its
URL and admin token. `session_api.py URL TOKEN RUNTIME OPENS STEPS FILES` (the latency column):
    - OPENS session opens from the agent's warm pool (`POST .../sessions`): each first waits,
      untimed, until the pool has a sandbox ready, and must then have taken it (`warm: true` in the
      answer and the metrics' handed_over count); timed from sending the request to its 201;
    - OPENS bare `docker run --rm --runtime RUNTIME --network none IMAGE echo hi` (until it exits);
    - in one session: STEPS `echo hi` steps (`POST .../runs/{id}/exec`, from sending to the whole
      JSON result), then STEPS `docker exec CID echo hi` from the Docker CLI into the same workload
      container (a process started per call); five warm-ups of each left out;
    - FILES rounds of a 1 MiB `PUT .../files` then a `GET` of it, compared byte for byte (two
      warm-ups left out).
bench/session_density.py (the density column) uses the helpers here.

Prints one JSON line. HTTP goes to loopback only, containers are the ones this bench creates or
that serve created for it; every loop is bounded in count and time.
"""
import concurrent.futures
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

BASE = "/api/admin/platform/agent-sandbox"
IMAGE = "agent-sandbox/workload:dev"
AGENT = "bench"
MIB = 1024 * 1024


class Api:
    """One persistent HTTP/1.1 connection to serve per thread (a client that keeps its connection)."""

    def __init__(self, url, token):
        parsed = urllib.parse.urlparse(url)
        self.host, self.port, self.token = parsed.hostname, parsed.port, token
        self.local = threading.local()

    def call(self, method, path, body=None, ctype="application/json", accept="application/json",
             timeout=600):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        headers = {"Authorization": "Bearer " + self.token, "Accept": accept}
        if body is not None:
            headers["Content-Type"] = ctype
        for attempt in (1, 2):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
                self.local.conn = conn
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    conn.close()
                    self.local.conn = None
                return response.status, data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def json(self, method, path, body=None, expect=(200,)):
        status, data = self.call(method, path, body)
        if status not in expect:
            raise RuntimeError("%s %s: %d %s" % (method, path, status, data[:400].decode(errors="replace")))
        return json.loads(data) if data else None


def metric(url, name):
    parsed = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


READY = 'agent_sandbox_warm_sandboxes{state="ready"}'
HANDED = 'agent_sandbox_warm_sandboxes_ended_total{outcome="handed_over"}'


def wait_warm(url, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if metric(url, READY) >= 1:
            return metric(url, HANDED)
        time.sleep(0.1)
    raise RuntimeError("no warm sandbox was ready within %d s" % timeout)


def ms(seconds):
    return round(seconds * 1000, 1)


def pct(samples, q):
    ordered = sorted(samples)
    return ms(ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))])


def summary(samples):
    return {"p50": ms(statistics.median(samples)), "p99": pct(samples, 0.99), "n": len(samples)}


def containers_of(run_id):
    """The run's containers as {role: id}, the role from the name (`asb-<run>-agent`, `-proxy`)."""
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", "label=agent-sandbox.dev/run-id=" + run_id,
         "--format", "{{.Names}} {{.ID}}"], check=True, capture_output=True, text=True, timeout=60).stdout
    return {line.split()[0].rsplit("-", 1)[-1]: line.split()[1] for line in out.splitlines() if line.strip()}


def open_session(api, idle=900):
    status, data = api.call("POST", BASE + "/sessions", {"agent": AGENT, "idle_seconds": idle})
    return status, json.loads(data) if data else {}


def close_session(api, run_id):
    return api.json("DELETE", BASE + "/runs/" + run_id)


def step(api, run_id, command=("echo", "hi")):
    result = api.json("POST", BASE + "/runs/%s/exec" % run_id, {"command": list(command)})
    if result.get("exit_status") != 0 or result.get("stdout") != "hi\n":
        raise RuntimeError("unexpected step result: %s" % json.dumps(result)[:400])
    return result


def timed(fn):
    start = time.monotonic()
    value = fn()
    return time.monotonic() - start, value


def latency(url, api, runtime, opens, steps, files):
    out = {"mode": "latency", "runtime": runtime, "load_before": os.getloadavg()[0]}
    # One warm-up of each, not counted: the JVM's first requests, the image's first start.
    before = wait_warm(url)
    status, warmup = open_session(api)
    if status != 201:
        raise RuntimeError("the warm-up open answered %d: %s" % (status, warmup))
    keep = warmup["run_id"]
    if warmup.get("runtime") != runtime:
        raise RuntimeError("the session runs under %s, not %s" % (warmup.get("runtime"), runtime))
    subprocess.run(["docker", "run", "--rm", "--runtime", runtime, "--network", "none", IMAGE,
                    "echo", "hi"], check=True, capture_output=True, timeout=120)
    open_s, bare_run_s = [], []
    for _ in range(opens):
        before = wait_warm(url)
        elapsed, (status, view) = timed(lambda: open_session(api))
        if status != 201 or view.get("warm") is not True:
            raise RuntimeError("an open did not take a warm sandbox: %d %s" % (status, view))
        if metric(url, HANDED) < before + 1:
            raise RuntimeError("an open did not take the warm sandbox it waited for")
        open_s.append(elapsed)
        close_session(api, view["run_id"])
        elapsed, _ = timed(lambda: subprocess.run(
            ["docker", "run", "--rm", "--runtime", runtime, "--network", "none", IMAGE, "echo", "hi"],
            check=True, capture_output=True, timeout=120))
        bare_run_s.append(elapsed)
    out["warm_open"] = summary(open_s)
    out["bare_docker_run"] = summary(bare_run_s)
    # Steps in the warm-up session, then the Docker CLI into its workload container.
    workload = containers_of(keep).get("agent")
    if workload is None:
        raise RuntimeError("no workload container labelled with the session's run id %s: %s"
                           % (keep, containers_of(keep)))
    step_s, exec_s = [], []
    for i in range(steps + 5):
        elapsed, _ = timed(lambda: step(api, keep))
        if i >= 5:
            step_s.append(elapsed)
    for i in range(steps + 5):
        elapsed, done = timed(lambda: subprocess.run(
            ["docker", "exec", workload, "echo", "hi"], capture_output=True, timeout=60))
        if done.returncode != 0 or done.stdout != b"hi\n":
            raise RuntimeError("docker exec answered %d %r" % (done.returncode, done.stderr[:200]))
        if i >= 5:
            exec_s.append(elapsed)
    out["step"] = summary(step_s)
    out["docker_exec"] = summary(exec_s)
    payload = os.urandom(MIB)
    put_s, get_s, both_s = [], [], []
    for i in range(files + 2):
        name = "/runs/%s/files?path=bench-%d.bin" % (keep, i)
        t_put, (status, _) = timed(lambda: api.call("PUT", BASE + name, payload, "application/octet-stream"))
        if status != 200:
            raise RuntimeError("PUT answered %d" % status)
        t_get, (status, back) = timed(lambda: api.call("GET", BASE + name, accept="application/octet-stream"))
        if status != 200 or back != payload:
            raise RuntimeError("GET answered %d with %d bytes, not the file put" % (status, len(back)))
        if i >= 2:
            put_s.append(t_put)
            get_s.append(t_get)
            both_s.append(t_put + t_get)
    out["file_put"] = summary(put_s)
    out["file_get"] = summary(get_s)
    out["file_put_get"] = summary(both_s)
    close_session(api, keep)
    out["load_after"] = os.getloadavg()[0]
    return out


if __name__ == "__main__":
    url, token, runtime = sys.argv[1], sys.argv[2], sys.argv[3]
    opens, steps, files = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    print(json.dumps(latency(url, Api(url, token), runtime, opens, steps, files)), flush=True)
