"""A real serve for the tests: the packaged jar ($AGENT_SANDBOX_JAR, default
cli/target/agent-sandbox.jar) on loopback with the Docker backend, two agents, and a token limited
to each. Everything is created in a temporary folder and the server is stopped after the tests."""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))

JAR = Path(os.environ.get("AGENT_SANDBOX_JAR", ROOT / "cli" / "target" / "agent-sandbox.jar"))
JAVA = os.environ.get("JAVA", str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if "JAVA_HOME" in os.environ else "java")
SESSIONS = "/api/admin/platform/agent-sandbox/sessions"


def _token(db, name, agent):
    out = subprocess.run(
        [JAVA, "-jar", str(JAR), "token", "create", "--db", db, "--name", name,
         "--scopes", "agent_sandbox.read,agent_sandbox.run", "--agents", agent],
        check=True, capture_output=True, text=True, timeout=120)
    return out.stdout.strip()


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    if not JAR.exists():
        pytest.fail(f"the packaged jar {JAR} is missing (build it: ./mvnw -pl cli -am package -DskipTests)")
    folder = tmp_path_factory.mktemp("asb-python")
    db = f"jdbc:sqlite:{folder / 'store.db'}"
    serve = subprocess.Popen(
        [JAVA, "-jar", str(JAR), "serve", "--listen", "127.0.0.1:0", "--db", db,
         "--data-dir", str(folder / "data"), "--instance-id", f"python-client-{os.getpid()}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = serve.stdout.readline()
        if not line:
            break
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            base = found.group(1)
            break
    if base is None:
        serve.kill()
        pytest.fail("serve did not say where it listens within 120 s")
    # Drain the rest of its output so its pipe never fills.
    import threading
    threading.Thread(target=lambda: [None for _ in serve.stdout], daemon=True).start()
    admin = (folder / "data" / "admin-token").read_text().strip()
    agent = {"image": "agent-sandbox/workload:dev", "ttl_seconds": 300,
             "resources": {"cpus": 1, "memory_mb": 256, "pids": 128}}
    body = {"enabled": True, "backend": "docker", "reason": "python client tests",
            "agents": {"pya": dict(agent, allow=["allowed.test"]), "pyb": dict(agent, allow=["other.test"])}}
    request = urllib.request.Request(base + "/api/admin/platform/agent-sandbox", method="PUT",
                                     data=json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {admin}", "If-Match": '"0"',
                                              "Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=60).read()
    with urllib.request.urlopen(base + "/api/openapi.json", timeout=60) as r:
        sessions = SESSIONS in json.load(r).get("paths", {})
    info = {"url": base, "a": _token(db, "py-a", "pya"), "b": _token(db, "py-b", "pyb"), "sessions": sessions}
    yield info
    serve.terminate()
    try:
        serve.wait(60)
    except subprocess.TimeoutExpired:
        serve.kill()


@pytest.fixture
def sessions_served(server):
    if not server["sessions"]:
        pytest.skip(f"this server's /api/openapi.json has no {SESSIONS} (sessions have not landed)")
