#!/usr/bin/env python3
"""Times sandboxed runs against bare `docker run --rm` of the same image and command.

Driven by bench/run-bench.sh, which starts `agent-sandbox serve` and passes its URL and token.
For each runtime it measures, over N runs each (after one warm-up):
  - launch-to-first-output: from sending the request (or spawning `docker run`) to the first
    byte of the workload's output;
  - whole run: from the request to the answer with the result (network, proxy, workload and
    teardown included), or until `docker run --rm` exits (container removed).
With a 7th argument N > 0 the agent has a warm pool (`warm: N`): each sandboxed run first waits,
untimed, for a warm sandbox to be ready and must then take it (the metrics' handed_over count).
With a 7th argument `pool` the control plane runs with a Docker proxy pool (`serve
--docker-proxy-pool`): each sandboxed run first waits, untimed, for a standby to be ready and must
then take it (the metrics' taken count), so the timings are those of a cold run on a pooled proxy.
Prints medians, the first output's p99 and the 1-minute load average when it ended.
Only loopback and the local Docker daemon are used. Every loop is bounded.
"""
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

BASE = "/api/admin/platform/agent-sandbox"
IMAGE = "agent-sandbox/workload:dev"
COMMAND = ["sh", "-c", "echo first; i=0; while [ $i -lt 200 ]; do i=$((i+1)); done; echo done"]


def call(url, token, method, path, body=None, timeout=300):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    return urllib.request.urlopen(req, timeout=timeout)


def sandboxed_first_output(url, token, agent):
    start = time.monotonic()
    started = json.load(call(url, token, "POST", BASE + "/runs", {"agent": agent, "command": COMMAND}))
    run_id = started["run_id"]
    stream = call(url, token, "GET", BASE + "/runs/" + run_id + "/output")
    first = stream.read(1)
    elapsed = time.monotonic() - start
    if not first:
        raise RuntimeError("run %s produced no output" % run_id)
    stream.read()  # until the run ends
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        view = json.load(call(url, token, "GET", BASE + "/runs/" + run_id))
        if view["status"] not in ("pending", "running"):
            break
        time.sleep(0.05)
    return elapsed


def sandboxed_whole(url, token, agent):
    start = time.monotonic()
    result = json.load(call(url, token, "POST", BASE + "/run", {"agent": agent, "command": COMMAND}))
    elapsed = time.monotonic() - start
    if result.get("exit_status") != 0 or "done" not in result.get("output_tail", ""):
        raise RuntimeError("unexpected result: %s" % json.dumps(result)[:500])
    return elapsed, result["runtime"]


def bare_first_output(runtime):
    start = time.monotonic()
    proc = subprocess.Popen(
        ["docker", "run", "--rm", "--runtime", runtime, "--network", "none", IMAGE] + COMMAND,
        stdout=subprocess.PIPE)
    first = proc.stdout.read(1)
    elapsed = time.monotonic() - start
    proc.stdout.read()
    proc.wait(timeout=120)
    if not first:
        raise RuntimeError("bare docker run produced no output")
    return elapsed


def bare_whole(runtime):
    start = time.monotonic()
    subprocess.run(
        ["docker", "run", "--rm", "--runtime", runtime, "--network", "none", IMAGE] + COMMAND,
        check=True, stdout=subprocess.DEVNULL, timeout=120)
    return time.monotonic() - start


class VmmRss:
    """Samples the resident memory of every QEMU process (the microVM backend's VMMs) while on."""

    def __init__(self):
        self.peak_kb = 0
        self.samples_kb = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.2):
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open("/proc/%s/comm" % pid) as f:
                        if not f.read().startswith("qemu-system"):
                            continue
                    with open("/proc/%s/status" % pid) as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                kb = int(line.split()[1])
                                self.samples_kb.append(kb)
                                self.peak_kb = max(self.peak_kb, kb)
                except OSError:
                    continue

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


def metric_values(url, names):
    """The values of the named series (full names with labels) on /metrics; 0 when absent."""
    text = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
    found = {name: 0.0 for name in names}
    for line in text.splitlines():
        for name in names:
            if line.startswith(name + " "):
                found[name] = float(line.split()[-1])
    return found


def ready_then_used(url, ready, used, what, timeout=300):
    """Waits until the series `ready` is at least 1; returns the series `used` at that moment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        values = metric_values(url, [ready, used])
        if values[ready] >= 1:
            return values[used]
        time.sleep(0.1)
    raise RuntimeError("no %s was ready within %d s" % (what, timeout))


def warm_ready(url, agent):
    """Waits until the agent's warm pool has a sandbox ready; returns how many were handed over."""
    return ready_then_used(
        url,
        'agent_sandbox_warm_sandboxes{state="ready"}',  # /metrics names no agent: summed over them
        'agent_sandbox_warm_sandboxes_ended_total{outcome="handed_over"}',
        "warm sandbox")


def pool_ready(url, agent):
    """Waits until the Docker proxy pool has a standby ready; returns how many were taken."""
    return ready_then_used(
        url,
        "agent_sandbox_proxy_pool_ready",
        'agent_sandbox_proxy_pool_standbys_total{event="taken"}',
        "proxy-pool standby")


def percentile_ms(samples, q):
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index] * 1000)


def median_ms(samples):
    return round(statistics.median(samples) * 1000)


def main():
    url, token, agent, runtime, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    # The bare `docker run` to compare with: the same runtime, or (for a microVM) runc.
    bare = sys.argv[6] if len(sys.argv) > 6 else runtime
    # With a warm pool, each sandboxed run waits (untimed) until a warm sandbox is ready, and must
    # have taken it: the timings are then those of a hand-over, not of a preparation.
    # With the proxy pool, likewise for a standby: the timings are those of a cold run on a pooled
    # proxy, not of one that found the pool empty.
    mode = sys.argv[7] if len(sys.argv) > 7 else "0"
    ready = None
    if mode == "pool":
        ready, label = pool_ready, runtime + "-pool"
    elif int(mode) > 0:
        ready, label = warm_ready, runtime + "-warm"
    else:
        label = runtime

    def sandboxed(measure):
        before = ready(url, agent) if ready else None
        value = measure()
        if ready and ready(url, agent) < before + 1:
            raise RuntimeError("a sandboxed run did not take the %s it waited for" % label)
        return value

    # One warm-up of each, not counted: image layers, the cached root disk, the JVM's first requests.
    sandboxed(lambda: sandboxed_whole(url, token, agent))
    bare_whole(bare)
    rows = {"sandboxed_first": [], "sandboxed_whole": [], "bare_first": [], "bare_whole": []}
    used = None
    with VmmRss() as rss:
        for _ in range(runs):
            rows["bare_first"].append(bare_first_output(bare))
            rows["bare_whole"].append(bare_whole(bare))
            rows["sandboxed_first"].append(
                sandboxed(lambda: sandboxed_first_output(url, token, agent)))
            elapsed, used = sandboxed(lambda: sandboxed_whole(url, token, agent))
            rows["sandboxed_whole"].append(elapsed)
    if used != runtime:
        raise RuntimeError("the sandbox ran under %s, not %s" % (used, runtime))
    out = {k: median_ms(v) for k, v in rows.items()}
    out["sandboxed_first_p99"] = percentile_ms(rows["sandboxed_first"], 0.99)
    out["bare_first_p99"] = percentile_ms(rows["bare_first"], 0.99)
    out["load_average"] = os.getloadavg()[0]
    out["runtime"] = label
    out["bare_runtime"] = bare
    out["runs"] = runs
    if rss.samples_kb:
        out["vmm_rss_peak_mb"] = round(rss.peak_kb / 1024)
        out["vmm_rss_median_mb"] = round(statistics.median(rss.samples_kb) / 1024)
    out["whole_ratio"] = round(out["sandboxed_whole"] / out["bare_whole"], 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
