"""The Python client against a real serve on Docker: runs, refusals, errors, another agent's run."""

import pytest

from agent_sandbox import ApiError, Client, OutputLine, Sandbox


def test_a_run_answers_its_exit_status_output_and_refused_host(server):
    client = Client(server["url"], token=server["a"])
    result = client.run("pya", ["sh", "-c", "echo hello-python; curl -sS -m 10 -o /dev/null http://denied.test/; exit 3"])
    assert result.exit_status == 3, result
    assert result.end == "exit"
    assert "hello-python" in result.output_tail
    refused = [d for d in result.refused if d.host == "denied.test"]
    assert refused and refused[0].reason == "not-allowed", result.egress


def test_output_streams_line_by_line(server):
    client = Client(server["url"], token=server["a"])
    run_id = client.start("pya", ["sh", "-c", "echo one; echo two >&2; echo three"])
    lines = list(client.output(run_id))
    assert [line.text for line in lines if line.stream == "stdout"] == ["one\n", "three\n"]
    assert OutputLine("stderr", "two\n") in lines


def test_another_agent_is_refused_as_unlisted(server):
    client = Client(server["url"], token=server["a"])
    with pytest.raises(ApiError) as refused:
        client.run("pyb", ["true"])
    assert refused.value.code == "agent_not_listed"
    assert refused.value.status == 404  # exactly as an agent that is not configured


def test_another_agents_run_does_not_exist_for_the_token(server):
    b = Client(server["url"], token=server["b"])
    run_id = b.start("pyb", ["sh", "-c", "sleep 30"])
    a = Client(server["url"], token=server["a"])
    try:
        for call in (lambda: a.get(run_id), lambda: a.kill(run_id), lambda: list(a.output(run_id))):
            with pytest.raises(ApiError) as missing:
                call()
            assert (missing.value.status, missing.value.code) == (404, "run_not_found")
        assert run_id not in [r["run_id"] for r in a.runs()]
        assert run_id in [r["run_id"] for r in b.runs()]
    finally:
        b.kill(run_id)


def test_a_bad_token_and_a_bad_run_id_are_api_errors(server):
    with pytest.raises(ApiError) as unknown:
        Client(server["url"], token="asb_not_a_token").whoami()
    assert (unknown.value.status, unknown.value.code) == (401, "invalid_token")
    with pytest.raises(ApiError) as bad:
        Client(server["url"], token=server["a"]).get("../token")
    assert bad.value.code == "invalid_arguments"
    assert "asb_" not in repr(Client(server["url"], token=server["a"]))


def test_a_session_as_a_context_manager(server, sessions_served):
    client = Client(server["url"], token=server["a"])
    with Sandbox(agent="pya", client=client) as sb:
        sb.write("app/hello.sh", "echo hello $1\n")
        step = sb.exec(["sh", "hello.sh", "python"], cwd="app")
        assert step.exit_status == 0 and "hello python" in step.stdout
        assert sb.read("app/hello.sh") == b"echo hello $1\n"
        assert any(e["name"] == "hello.sh" for e in sb.listdir("app"))
        events = list(sb.stream(["sh", "-c", "echo streamed"]))
        assert OutputLine("stdout", "streamed\n") in events
        assert events[-1].exit_status == 0
    assert sb.result.end == "closed"
    with pytest.raises(ApiError) as ended:
        sb.exec(["true"])
    assert ended.value.code == "run_ended"
