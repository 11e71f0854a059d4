#!/usr/bin/env python3
"""Times the control plane's own start and its plan endpoint (issue 12's control-plane targets).

Driven by bench/run-bench.sh (column `control-plane`), which passes the launcher that ships,
bin/agent-sandbox (with the AOT class cache scripts/aot-cache.sh trains, as scripts/serve.sh does):
  - serve ready: STARTS times, a fresh `agent-sandbox serve` on the embedded store (SQLite, a new
    data directory each time) from spawning the launcher to its "listening on" line and to the first
    200 of GET /readyz, and the process's CPU time (user + system) when ready; the process is stopped
    (SIGTERM) before the next start;
  - plan: on one more fresh control plane with one agent configured, after 10 untimed plans,
    PLANS sequential POST .../plan (Docker backend, the agent's image and a short command),
    each from sending the request to the whole answer read;
  - the control plane's resident memory after the plans (VmRSS).
Prints one JSON line. Only loopback is used. Every loop is bounded.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BASE = "/api/admin/platform/agent-sandbox"


def start_serve(launcher, work):
    """Starts serve on a fresh data dir; returns (process, url, ms to listening, ms to ready)."""
    data = tempfile.mkdtemp(dir=work)
    log = open(os.path.join(data, "serve.log"), "w+")
    start = time.monotonic()
    proc = subprocess.Popen(
        [launcher, "serve", "--listen", "127.0.0.1:0",
         "--db", "jdbc:sqlite:" + os.path.join(data, "store.db"), "--data-dir", data,
         "--instance-id", "bench-cp-%d" % os.getpid()],
        stdout=log, stderr=subprocess.STDOUT)
    url = None
    listening = None
    deadline = start + 120
    while url is None and time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError("serve exited at start: " + log.read()[-2000:])
        log.seek(0)
        for line in log.read().splitlines():
            if "listening on http:" in line:
                url = line.split("listening on ", 1)[1].split()[0]
                listening = time.monotonic() - start
                break
        if url is None:
            time.sleep(0.005)
    if url is None:
        proc.kill()
        raise RuntimeError("serve did not print its listening line within 120 s")
    ready = None
    while ready is None and time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(url + "/readyz", timeout=10).status == 200:
                ready = time.monotonic() - start
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.005)
    if ready is None:
        proc.kill()
        raise RuntimeError("serve was not ready within 120 s")
    token = open(os.path.join(data, "admin-token")).read().strip()
    return proc, url, token, listening, ready, cpu_seconds(proc.pid)


def cpu_seconds(pid):
    """The process's user + system CPU time so far (the launcher execs the JVM: same pid)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def call(url, token, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=60) as answer:
        return answer.read()


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def pct_ms(samples, q):
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] * 1000, 1)


def main():
    launcher, starts, plans = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with tempfile.TemporaryDirectory(prefix="asb-cp-bench.") as work:
        listening, ready, cpu = [], [], []
        for _ in range(starts):
            proc, _, _, to_listening, to_ready, used = start_serve(launcher, work)
            listening.append(to_listening)
            ready.append(to_ready)
            cpu.append(used)
            stop(proc)
        proc, url, token, _, _, _ = start_serve(launcher, work)
        try:
            call(url, token, "PUT", BASE, {
                "enabled": True, "backend": "docker", "reason": "bench",
                "agents": {"bench": {"allow": ["example.com"], "image": "agent-sandbox/workload:dev",
                                     "ttl_seconds": 300}}})
            request = {"agent": "bench", "command": ["sh", "-c", "echo first"]}
            for _ in range(10):
                call(url, token, "POST", BASE + "/plan", request)
            times = []
            for _ in range(plans):
                begin = time.monotonic()
                call(url, token, "POST", BASE + "/plan", request)
                times.append(time.monotonic() - begin)
            memory = rss_mb(proc.pid)
        finally:
            stop(proc)
    print(json.dumps({
        "runtime": "control-plane",
        "serve_cpu_ms_to_ready_median": round(statistics.median(cpu) * 1000),
        "serve_listening_ms_median": round(statistics.median(listening) * 1000),
        "serve_ready_ms_median": round(statistics.median(ready) * 1000),
        "serve_ready_ms_max": round(max(ready) * 1000),
        "starts": starts,
        "plan_ms_p50": pct_ms(times, 0.5),
        "plan_ms_p99": pct_ms(times, 0.99),
        "plans": plans,
        "serve_rss_mb_after_plans": memory,
        "load_average": os.getloadavg()[0],
    }))


if __name__ == "__main__":
    main()
