#!/usr/bin/env python3
"""Times the proxy image from `docker start` to its ready line, and its idle memory, as the Docker
backend runs it: the run's policy in AGENT_SANDBOX_PROXY_POLICY, the backend's default 256 MiB
memory cap and one CPU, read-only root with a tmpfs /tmp, no network (the proxy listens on the
container's loopback). Give it several images to compare builds side by side in one run (e.g. the
image built from main and a candidate built with AGENT_SANDBOX_PROXY_IMAGE=...:candidate).

  bench/proxy-image-start.py STARTS IMAGE...     (e.g. 7 agent-sandbox/proxy:dev)

Prints the load average, then per image: start-to-ready median/min/max in ms (measured from
`docker start`, so container start is included; creation is not), the JVM's CPU time to ready, and
its RSS 10 s after ready (idle: the start's transient memory returned), split into anonymous memory (the proxy's own) and file-backed pages (the
class cache and runtime files mapped from the image, shared in the page cache by every proxy of the
same image on a host). Every container is labelled agent-sandbox.bench=proxy-image-start and
removed. Needs root (reads the container process's /proc entry).
"""
import json
import os
import select
import statistics
import subprocess
import sys
import time

if len(sys.argv) < 3:
    raise SystemExit("usage: bench/proxy-image-start.py STARTS IMAGE...")
STARTS = int(sys.argv[1])
IMAGES = sys.argv[2:]
POLICY = json.dumps({"listen": "127.0.0.1:3128", "allow": ["a.test:443"], "run_id": "bench",
                     "decisions": "-", "hosts": {"a.test": ["192.0.2.1"]}})
LABEL = "agent-sandbox.bench=proxy-image-start"


def docker(*args):
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True).stdout.strip()


def one(image):
    cid = docker("create", "--label", LABEL, "--network", "none", "--memory", "256m", "--cpus", "1",
                 "--read-only", "--tmpfs", "/tmp:rw,noexec,nosuid,nodev,size=16m,mode=1777",
                 "-e", "AGENT_SANDBOX_PROXY_POLICY=" + POLICY, image)
    try:
        t0 = time.monotonic()
        docker("start", cid)
        logs = subprocess.Popen(["docker", "logs", "-f", cid], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            deadline = t0 + 120
            ready = None
            while time.monotonic() < deadline:
                r, _, _ = select.select([logs.stderr], [], [], deadline - time.monotonic())
                if not r:
                    break
                line = logs.stderr.readline()
                if not line:
                    break
                if "ready on" in line:
                    ready = time.monotonic()
                    break
            if ready is None:
                raise SystemExit("proxy-image-start: no ready line within 120 s from " + image)
        finally:
            logs.terminate()
            logs.wait(10)
        pid = docker("inspect", "-f", "{{.State.Pid}}", cid)
        stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        cpu_ms = (int(stat[11]) + int(stat[12])) * 1000 / os.sysconf("SC_CLK_TCK")
        time.sleep(10)
        mem = {}
        for line in open(f"/proc/{pid}/status"):
            key = line.split(":", 1)[0]
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                mem[key] = int(line.split()[1]) / 1024
        return (ready - t0) * 1000, cpu_ms, mem["VmRSS"], mem.get("RssAnon", -1.0), mem.get("RssFile", -1.0)
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)


def measure(image):
    rows = [one(image) for _ in range(STARTS)]
    ms = [r[0] for r in rows]
    print(f"{image}: ready median {statistics.median(ms):.0f} ms (min {min(ms):.0f}, max {max(ms):.0f}), "
          f"CPU to ready median {statistics.median(r[1] for r in rows):.0f} ms, "
          f"RSS idle median {statistics.median(r[2] for r in rows):.1f} MiB "
          f"(anonymous {statistics.median(r[3] for r in rows):.1f}, "
          f"file-backed {statistics.median(r[4] for r in rows):.1f}), n={STARTS}", flush=True)


print(f"load average before: {open('/proc/loadavg').read().split()[:3]}", flush=True)
for each in IMAGES:
    measure(each)
print(f"load average after: {open('/proc/loadavg').read().split()[:3]}", flush=True)
