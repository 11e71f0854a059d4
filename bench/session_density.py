#!/usr/bin/env python3
"""Density: many idle sessions open at once through the API of a real `serve`, then a step each.

`session_density.py URL TOKEN SERVE_PID RUNTIME SESSIONS PARALLEL` (driven by
bench/session-api-bench.sh density):
  - opens SESSIONS sessions (the agent has no warm pool: each is a cold open), PARALLEL at a time,
    and stops opening at the first refusal or failure, reporting the answer and whether the failed
    run left any container, network or volume;
  - once they are open and idle, samples memory: each container's memory cgroup (usage less its
    inactive file pages, as `docker stats` counts it, and its anonymous rss; under runsc the
    sandbox's sentry and gofer are in it), proxy and workload apart, and their containerd shims'
    (PSS: shared text split among them); the control plane's resident memory (VmRSS and PSS of
    SERVE_PID) and dockerd's; the host's MemAvailable; beside a sample taken before the first open;
  - gives each session one `echo hi` step, one after another (timed), and samples again;
  - closes every session, PARALLEL at a time, then waits (at most 120 s) until nothing labelled
    app.kubernetes.io/managed-by=agent-sandbox with this control plane's instance label is left,
    and reports what is.

Prints one JSON line. Loopback and the local Docker daemon only; every loop bounded.
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import time

from session_api import Api, close_session, ms, open_session, step, summary

MANAGED = "label=app.kubernetes.io/managed-by=agent-sandbox"
OPEN_BUDGET_S = 1500  # the whole opening phase; what is not open by then counts as not opened


def docker(*args, timeout=120):
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True,
                          timeout=timeout).stdout


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kb(pid):
    """Proportional set size: shared pages (a binary's text, libraries) split among their users."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def processes(prefix):
    """(pid, command line) of every process whose name starts with prefix."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % pid) as f:
                if not f.read().strip().startswith(prefix):
                    continue
            with open("/proc/%s/cmdline" % pid) as f:
                found.append((int(pid), f.read().split("\0")))
        except OSError:
            continue
    return found


def tasks(container_id):
    """Threads in the container's pids cgroup (under runsc: the Sentry's and the gofer's)."""
    try:
        with open("/sys/fs/cgroup/pids/docker/%s/pids.current" % container_id) as f:
            return int(f.read())
    except OSError:
        return 0


def threads(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def shims_kb(container_ids):
    """The containerd shims of these containers (`-id CID`): how many, their RSS and PSS summed."""
    count, rss, pss, shim_threads = 0, 0, 0, 0
    for pid, argv in processes("containerd-shim"):
        if "-id" in argv and argv.index("-id") + 1 < len(argv) and argv[argv.index("-id") + 1] in container_ids:
            count += 1
            rss += rss_kb(pid)
            pss += pss_kb(pid)
            shim_threads += threads(pid)
    return {"shims": count, "shims_rss_kb": rss, "shims_pss_kb": pss, "shims_threads": shim_threads}


def mem_available_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def cgroup_kb(container_id):
    """(usage less inactive file, anonymous rss) of a container's cgroup v1 memory controller, KiB."""
    for root in ("/sys/fs/cgroup/memory/docker/", "/sys/fs/cgroup/docker/"):
        folder = root + container_id
        if os.path.isdir(folder):
            break
    else:
        return None
    stat = {}
    with open(folder + "/memory.stat") as f:
        for line in f:
            key, value = line.split()
            stat[key] = int(value)
    with open(folder + "/memory.usage_in_bytes") as f:
        usage = int(f.read())
    return (usage - stat.get("total_inactive_file", 0)) // 1024, stat.get("total_rss", 0) // 1024


def host_sample(serve_pid):
    return {"serve_rss_kb": rss_kb(serve_pid), "serve_pss_kb": pss_kb(serve_pid),
            "serve_threads": threads(serve_pid),
            "dockerd_rss_kb": sum(rss_kb(p) for p, _ in processes("dockerd")),
            "mem_available_kb": mem_available_kb(), "load": os.getloadavg()[0]}


def containers_sample(instance):
    """Per role (proxy, workload): how many, their runtime, their cgroups' memory summed (KiB), and
    their shims'."""
    lines = docker("ps", "--no-trunc", "--filter", MANAGED, "--filter",
                   "label=agent-sandbox.dev/instance=" + instance,
                   "--format", "{{.ID}} {{.Names}}").splitlines()
    roles = {}
    for line in lines:
        cid, name = line.split()
        role = "proxy" if name.endswith("-proxy") else "workload"
        roles.setdefault(role, []).append(cid)
    out = {}
    for role, ids in roles.items():
        entry = {"containers": len(ids), "usage_kb": 0, "rss_kb": 0, "unread": 0,
                 "tasks": sum(tasks(cid) for cid in ids)}
        runtimes = docker("inspect", "--format", "{{.HostConfig.Runtime}}", *ids[:200]).split()
        entry["runtimes"] = sorted(set(runtimes))
        for cid in ids:
            counted = cgroup_kb(cid)
            if counted is None:
                entry["unread"] += 1
            else:
                entry["usage_kb"] += counted[0]
                entry["rss_kb"] += counted[1]
        entry.update(shims_kb(set(ids)))
        out[role] = entry
    return out


def leftovers(instance, run_id=None):
    label = ("label=agent-sandbox.dev/run-id=" + run_id) if run_id else (
        "label=agent-sandbox.dev/instance=" + instance)
    return {
        "containers": len(docker("ps", "-aq", "--filter", MANAGED, "--filter", label).split()),
        "networks": len(docker("network", "ls", "-q", "--filter", MANAGED, "--filter", label).split()),
        "volumes": len(docker("volume", "ls", "-q", "--filter", MANAGED, "--filter", label).split()),
    }


def per_session(before, sample, n):
    """MiB per open session: each role's cgroups and shims, the control plane's growth and its whole
    resident memory shared out, dockerd's growth, and the host's available memory's drop (others'
    builds move that one too)."""
    host, roles = sample["host"], sample["containers"]
    out = {}
    for role, entry in roles.items():
        out[role + "_cgroup"] = round(entry["usage_kb"] / n / 1024, 1)
        out[role + "_shim_pss"] = round(entry["shims_pss_kb"] / n / 1024, 1)
    out["serve_rss_growth"] = round((host["serve_rss_kb"] - before["serve_rss_kb"]) / n / 1024, 1)
    out["serve_rss_share"] = round(host["serve_rss_kb"] / n / 1024, 1)
    out["dockerd_rss_growth"] = round((host["dockerd_rss_kb"] - before["dockerd_rss_kb"]) / n / 1024, 1)
    out["host_available_drop"] = round((before["mem_available_kb"] - host["mem_available_kb"]) / n / 1024, 1)
    return out


def run(url, api, serve_pid, runtime, sessions, parallel):
    out = {"mode": "density", "runtime": runtime, "asked": sessions, "parallel": parallel}
    before = host_sample(serve_pid)
    out["before"] = before
    opened, failure, open_s = [], None, []
    deadline = time.monotonic() + OPEN_BUDGET_S

    def one(_):
        start = time.monotonic()
        status, view = open_session(api, idle=3600)
        return status, view, time.monotonic() - start

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
        pending = set()
        asked = 0
        while (asked < sessions or pending) and time.monotonic() < deadline:
            while failure is None and asked < sessions and len(pending) < parallel:
                pending.add(pool.submit(one, asked))
                asked += 1
            done, pending = concurrent.futures.wait(pending, timeout=5,
                                                    return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                try:
                    status, view, elapsed = future.result()
                except Exception as e:  # no answer at all (time-out, connection): a failure too
                    status, view, elapsed = None, {"error": str(e)[:300]}, None
                if status == 201:
                    opened.append(view["run_id"])
                    open_s.append(elapsed)
                elif failure is None:
                    failure = {"after_open": len(opened), "status": status, "answer": view}
            if failure is not None and not pending:
                break
    out["opened"] = len(opened)
    out["open_phase_s"] = round(time.monotonic() - started, 1)
    if open_s:
        out["cold_open"] = summary(open_s)
    instance = None
    if opened:
        first = docker("ps", "-aq", "--filter", "label=agent-sandbox.dev/run-id=" + opened[0]).split()[0]
        instance = docker("inspect", "--format", '{{index .Config.Labels "agent-sandbox.dev/instance"}}',
                          first).strip()
    if failure is not None:
        failed_run = (failure["answer"] or {}).get("run_id")
        if failed_run and instance:
            time.sleep(10)  # the failed open's teardown runs before its answer; give the daemon a moment
            failure["left_by_failed_run"] = leftovers(instance, failed_run)
        out["failure"] = failure
    if opened:
        time.sleep(30)  # let every sandbox settle idle before the sample
        out["idle"] = {"host": host_sample(serve_pid), "containers": containers_sample(instance)}
        out["idle_per_session_mib"] = per_session(before, out["idle"], len(opened))
        step_s, step_failed = [], []
        for run_id in opened:
            try:
                elapsed = time.monotonic()
                step(api, run_id)
                step_s.append(time.monotonic() - elapsed)
            except RuntimeError as e:
                step_failed.append(str(e)[:300])
        out["step"] = summary(step_s) if step_s else None
        out["step_failed"] = step_failed[:5]
        out["step_failed_count"] = len(step_failed)
        out["after_steps"] = {"host": host_sample(serve_pid), "containers": containers_sample(instance)}
        out["after_steps_per_session_mib"] = per_session(before, out["after_steps"], len(opened))
    close_s, close_failed = [], []

    def close(run_id):
        start = time.monotonic()
        close_session(api, run_id)
        return time.monotonic() - start

    with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
        for future in [pool.submit(close, r) for r in opened]:
            try:
                close_s.append(future.result(timeout=600))
            except Exception as e:  # a close that failed is reported, and the rest still closed
                close_failed.append(str(e)[:300])
    out["close"] = summary(close_s) if close_s else None
    out["close_failed"] = close_failed[:5]
    if instance:
        wait_until = time.monotonic() + 120
        left = leftovers(instance)
        while any(left.values()) and time.monotonic() < wait_until:
            time.sleep(2)
            left = leftovers(instance)
        out["left_after_close"] = left
        out["instance"] = instance
    out["after_close"] = host_sample(serve_pid)
    out["load_after"] = os.getloadavg()[0]
    out["open_p_ms"] = [ms(s) for s in sorted(open_s)[-3:]]
    return out


if __name__ == "__main__":
    url, token, pid, runtime = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    print(json.dumps(run(url, Api(url, token), pid, runtime, int(sys.argv[5]), int(sys.argv[6]))),
          flush=True)
