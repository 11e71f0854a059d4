"""Agent Sandbox's Python client: runs and sessions over the admin API, standard library only.

    from agent_sandbox import Client, Sandbox
    result = Client().run("helper", ["python", "-c", "print(1)"])
    with Sandbox(agent="helper") as sb:
        sb.write("app.py", "print('hi')\\n")
        step = sb.exec(["python", "app.py"])

docs/clients.md has the whole surface; docs/api.md is the contract it follows.
"""

from ._client import (
    ApiError,
    Client,
    EgressDecision,
    OutputLine,
    RunResult,
    Sandbox,
    StepResult,
)

__all__ = [
    "ApiError",
    "Client",
    "EgressDecision",
    "OutputLine",
    "RunResult",
    "Sandbox",
    "StepResult",
]
