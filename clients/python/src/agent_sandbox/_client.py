"""The client itself: one Client per server and token, typed results, the API's errors as ApiError."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

FEATURE = "/api/admin/platform/agent-sandbox"
_RUN_ID = re.compile(r"[a-z0-9]{1,32}")
# Longer than any run may last (4 hours): the server's own deadline decides.
_LONGEST = 4 * 3600 + 300
_SHORT = 60


class ApiError(Exception):
    """The API refused or failed a request: its HTTP status, stable ``code`` and message.

    ``status`` is 0 and ``code`` ``unreachable`` when the server did not answer.
    """

    def __init__(self, status: int, code: str, message: str, body: Optional[dict] = None):
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body or {}


@dataclass(frozen=True)
class EgressDecision:
    """One decision of the sandbox's egress proxy (docs/proxy.md)."""

    decision: str
    host: str
    port: Optional[int]
    reason: str

    @staticmethod
    def of(raw: Mapping[str, Any]) -> "EgressDecision":
        return EgressDecision(
            str(raw.get("decision", "")), str(raw.get("host", "")), raw.get("port"), str(raw.get("reason", ""))
        )


@dataclass(frozen=True)
class RunResult:
    """A run's (or a closed session's) state and result, as ``GET .../runs/{id}`` answers it."""

    run_id: str
    agent: str
    kind: str
    status: str
    end: Optional[str]
    exit_status: Optional[int]
    output_tail: str
    egress: tuple = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def refused(self) -> list:
        """The egress connections the proxy refused, each with its host and reason."""
        return [d for d in self.egress if d.decision == "deny"]

    @staticmethod
    def of(raw: Mapping[str, Any]) -> "RunResult":
        return RunResult(
            run_id=raw["run_id"],
            agent=raw.get("agent", ""),
            kind=raw.get("kind", "run"),
            status=raw.get("status", ""),
            end=raw.get("end"),
            exit_status=raw.get("exit_status"),
            output_tail=raw.get("output_tail") or "",
            egress=tuple(EgressDecision.of(d) for d in raw.get("egress") or ()),
            raw=dict(raw),
        )


@dataclass(frozen=True)
class StepResult:
    """One step of a session (docs/api.md, Steps)."""

    step: int
    status: str
    end: Optional[str]
    exit_status: Optional[int]
    stdout: str
    stderr: str
    duration_ms: Optional[int]
    egress: tuple = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def refused(self) -> list:
        return [d for d in self.egress if d.decision == "deny"]

    @staticmethod
    def of(raw: Mapping[str, Any]) -> "StepResult":
        return StepResult(
            step=raw.get("step", 0),
            status=raw.get("status", ""),
            end=raw.get("end"),
            exit_status=raw.get("exit_status"),
            stdout=raw.get("stdout") or "",
            stderr=raw.get("stderr") or "",
            duration_ms=raw.get("duration_ms"),
            egress=tuple(EgressDecision.of(d) for d in raw.get("egress") or ()),
            raw=dict(raw),
        )


@dataclass(frozen=True)
class OutputLine:
    """A line of a run's or a step's streamed output: ``stream`` is stdout or stderr."""

    stream: str
    text: str


def _check_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise ApiError(400, "invalid_arguments", f"name a run: {run_id!r:.60} is not a run id")
    return run_id


class Client:
    """The admin API for one server and one token.

    ``url`` defaults to ``$AGENT_SANDBOX_URL`` or http://127.0.0.1:8080; ``token`` to the file named
    by ``token_file``, else ``$AGENT_SANDBOX_TOKEN``. The token is sent to ``url`` only.
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, token_file: Optional[str] = None):
        self.url = (url or os.environ.get("AGENT_SANDBOX_URL") or "http://127.0.0.1:8080").rstrip("/")
        if token is None and token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        if token is None:
            token = os.environ.get("AGENT_SANDBOX_TOKEN")
        if not token:
            raise ValueError("no token: pass token= or token_file=, or set AGENT_SANDBOX_TOKEN")
        self._token = token

    def __repr__(self) -> str:  # never the token
        return f"Client(url={self.url!r})"

    # -- the token and runs ------------------------------------------------------------------

    def whoami(self) -> dict:
        """Who the token is: its name, scopes and the agents it is limited to (None: every one)."""
        return self._json("GET", "/api/admin/platform/token", action="read the token")

    def run(self, agent: str, command: Sequence[str], env: Optional[Mapping[str, str]] = None,
            labels: Optional[Mapping[str, str]] = None) -> RunResult:
        """Runs ``command`` in a new sandbox of ``agent`` and answers once it has ended."""
        body = self._run_body(agent, command, env, labels)
        return RunResult.of(self._json("POST", FEATURE + "/run", body, timeout=_LONGEST, action="run a command"))

    def start(self, agent: str, command: Sequence[str], env: Optional[Mapping[str, str]] = None,
              labels: Optional[Mapping[str, str]] = None) -> str:
        """Starts a run and answers its id at once (follow it with get, output, kill)."""
        body = self._run_body(agent, command, env, labels)
        return self._json("POST", FEATURE + "/runs", body, action="start a run")["run_id"]

    def get(self, run_id: str) -> RunResult:
        return RunResult.of(self._json("GET", f"{FEATURE}/runs/{_check_run_id(run_id)}", action=f"read run {run_id}"))

    def runs(self, **filters: Union[str, int]) -> list:
        """The newest runs (filters of docs/api.md: agent, status, since, label, kind, limit)."""
        query = "?" + urllib.parse.urlencode(filters) if filters else ""
        return self._json("GET", f"{FEATURE}/runs{query}", action="list runs")["runs"]

    def kill(self, run_id: str) -> None:
        self._json("DELETE", f"{FEATURE}/runs/{_check_run_id(run_id)}", action=f"kill run {run_id}")

    def output(self, run_id: str) -> Iterator[OutputLine]:
        """The run's redacted output, line by line as it is produced, until the run ends."""
        path = f"{FEATURE}/runs/{_check_run_id(run_id)}/output"
        for event in self._ndjson("GET", path, None, action=f"follow run {run_id}"):
            for stream in ("stdout", "stderr"):
                if stream in event:
                    yield OutputLine(stream, event[stream])

    def sandbox(self, agent: str, **options: Any) -> "Sandbox":
        return Sandbox(agent=agent, client=self, **options)

    # -- the wire ---------------------------------------------------------------------------

    @staticmethod
    def _run_body(agent, command, env, labels) -> dict:
        if isinstance(command, str) or not command:
            raise ApiError(400, "invalid_arguments", "command is a non-empty list of strings, such as ['ls', '-l']")
        body: dict = {"agent": agent, "command": list(command)}
        if env:
            body["env"] = dict(env)
        if labels:
            body["labels"] = dict(labels)
        return body

    def _request(self, method: str, path: str, body: Optional[bytes], content_type: Optional[str],
                 accept: str, timeout: float, action: str):
        request = urllib.request.Request(self.url + path, data=body, method=method)
        request.add_header("Authorization", "Bearer " + self._token)
        request.add_header("Accept", accept)
        if content_type:
            request.add_header("Content-Type", content_type)
        try:
            return urllib.request.urlopen(request, timeout=timeout)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                answer = json.loads(raw)
            except ValueError:
                answer = None
            if isinstance(answer, dict) and isinstance(answer.get("error"), str):
                raise ApiError(e.code, answer["error"], answer.get("message", action), answer) from None
            raise ApiError(e.code, f"http_{e.code}", f"{action}: HTTP {e.code} {raw[:120]!r}") from None
        except (urllib.error.URLError, OSError) as e:
            raise ApiError(0, "unreachable", f"{action}: {self.url} did not answer ({e}; is serve running?)") from None

    def _json(self, method: str, path: str, body: Optional[dict] = None, timeout: float = _SHORT, action: str = "") -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        with self._request(method, path, data, "application/json" if data else None, "application/json", timeout, action) as r:
            raw = r.read()
        return json.loads(raw) if raw else {}

    def _ndjson(self, method: str, path: str, body: Optional[dict], action: str) -> Iterator[dict]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        with self._request(method, path, data, "application/json" if data else None, "application/x-ndjson", _LONGEST, action) as r:
            for line in r:
                if line.strip():
                    yield json.loads(line)


class Sandbox:
    """A session (docs/api.md, Sessions) as a context manager: opened on enter, closed on exit.

    ``with Sandbox(agent="helper") as sb: sb.write("app.py", ...); r = sb.exec(["python", "app.py"])``
    """

    def __init__(self, agent: str, client: Optional[Client] = None, env: Optional[Mapping[str, str]] = None,
                 labels: Optional[Mapping[str, str]] = None, idle_seconds: Optional[int] = None):
        self.agent = agent
        self.client = client or Client()
        self._open_body: dict = {"agent": agent}
        if env:
            self._open_body["env"] = dict(env)
        if labels:
            self._open_body["labels"] = dict(labels)
        if idle_seconds is not None:
            self._open_body["idle_seconds"] = idle_seconds
        self.run_id: Optional[str] = None
        self.result: Optional[RunResult] = None

    def open(self) -> "Sandbox":
        opened = self.client._json("POST", FEATURE + "/sessions", self._open_body, timeout=300, action="open a session")
        self.run_id = opened["run_id"]
        return self

    def __enter__(self) -> "Sandbox":
        return self.open()

    def __exit__(self, *exc) -> None:
        if self.run_id is not None and self.result is None:
            self.close()

    def _path(self, suffix: str = "") -> str:
        if self.run_id is None:
            raise ApiError(409, "not_open", "use the session: it is not open (call open() or use with)")
        return f"{FEATURE}/runs/{self.run_id}{suffix}"

    @staticmethod
    def _step_body(command, env, cwd, stdin, timeout_seconds) -> dict:
        if isinstance(command, str) or not command:
            raise ApiError(400, "invalid_arguments", "command is a non-empty list of strings")
        body: dict = {"command": list(command)}
        for name, value in (("env", dict(env) if env else None), ("cwd", cwd), ("stdin", stdin),
                            ("timeout_seconds", timeout_seconds)):
            if value is not None:
                body[name] = value
        return body

    def exec(self, command: Sequence[str], env=None, cwd=None, stdin=None, timeout_seconds=None) -> StepResult:
        """Runs one step and answers its result (exit status, stdout and stderr tails, egress)."""
        body = self._step_body(command, env, cwd, stdin, timeout_seconds)
        return StepResult.of(self.client._json("POST", self._path("/exec"), body, timeout=_LONGEST, action="run a step"))

    def stream(self, command: Sequence[str], env=None, cwd=None, stdin=None, timeout_seconds=None) -> Iterator[Union[OutputLine, EgressDecision, StepResult]]:
        """Runs one step, yielding its output lines and egress decisions as they come, then its result."""
        body = self._step_body(command, env, cwd, stdin, timeout_seconds)
        for event in self.client._ndjson("POST", self._path("/exec"), body, action="run a step"):
            if "result" in event:
                yield StepResult.of(event["result"])
            elif "egress" in event:
                yield EgressDecision.of(event["egress"])
            else:
                for stream in ("stdout", "stderr"):
                    if stream in event:
                        yield OutputLine(stream, event[stream])

    def write(self, path: str, content: Union[str, bytes]) -> dict:
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        query = "?path=" + urllib.parse.quote(path, safe="")
        with self.client._request("PUT", self._path("/files" + query), data, "application/octet-stream",
                                  "application/json", 300, f"write {path}") as r:
            return json.loads(r.read())

    def read(self, path: str) -> bytes:
        query = "?path=" + urllib.parse.quote(path, safe="")
        with self.client._request("GET", self._path("/files" + query), None, None, "application/octet-stream",
                                  300, f"read {path}") as r:
            return r.read()

    def listdir(self, path: str = "/workspace") -> list:
        query = "?path=" + urllib.parse.quote(path, safe="")
        return self.client._json("GET", self._path("/files" + query), action=f"list {path}")["entries"]

    def close(self) -> RunResult:
        """Closes the session: outputs collected, credentials revoked, the sandbox removed."""
        self.result = RunResult.of(self.client._json("DELETE", self._path(), timeout=300, action="close the session"))
        return self.result
