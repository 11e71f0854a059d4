// Sessions against a real serve on Docker: await using, files, steps, the streamed step ending with
// its result, a refused egress in a step, the API's errors, and another agent's session.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError, refused, type Session, type StepEvent } from "../src/index.js";
import { clientA, clientB } from "./server.js";

async function apiError(call: () => Promise<unknown>): Promise<ApiError> {
  try {
    await call();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  assert.fail("the call answered, where the API should have refused it");
}

test("a session held with await using: files in, a step, files out, closed at the end of the block", async () => {
  let held: Session;
  {
    await using session = await clientA.openSession("tsa", { labels: { suite: "typescript" } });
    held = session;
    assert.equal(session.opened.kind, "session");
    assert.equal(session.opened.status, "running");
    const written = await session.write("app/hello.sh", "echo hello $1\n");
    assert.deepEqual([written.path, written.kind, written.size], ["/workspace/app/hello.sh", "file", 14]);
    const step = await session.exec(["sh", "hello.sh", "typescript"], { cwd: "app" });
    assert.deepEqual([step.status, step.end, step.exit_status, step.stdout], ["ended", "exit", 0, "hello typescript\n"]);
    assert.equal(await session.readText("/workspace/app/hello.sh"), "echo hello $1\n");
    assert.deepEqual((await session.list("app")).map((e) => [e.name, e.kind]), [["hello.sh", "file"]]);
    assert.deepEqual((await session.steps()).map((s) => s.command), [["sh", "hello.sh", "typescript"]]);
  }
  assert.equal(held.result?.end, "closed");
  assert.equal(held.result?.status, "closed");
  const ended = await apiError(() => held.exec(["true"]));
  assert.deepEqual([ended.status, ended.code], [409, "run_ended"]);
});

test("a streamed step yields its number, its lines and its refused egress as they come, and ends with its result", async () => {
  await clientA.withSession("tsa", async (session) => {
    const events: StepEvent[] = [];
    const stream = session.stream(["sh", "-c", "echo before; curl -sS -m 10 -o /dev/null https://denied.test/ 2>/dev/null; echo after-$? >&2"]);
    for await (const event of stream) events.push(event);
    assert.equal(events[0]?.type, "started");
    const last = events.at(-1);
    assert.equal(last?.type, "result");
    if (last?.type !== "result") return;
    assert.equal(last.result.exit_status, 0);
    assert.equal(last.result.stdout, "before\n");
    assert.match(last.result.stderr ?? "", /^after-\d+\n$/);
    assert.deepEqual(events.filter((e) => e.type === "stdout"), [{ type: "stdout", text: "before\n" }]);
    const streamedDenial = events.find((e) => e.type === "egress" && e.decision.decision === "deny");
    assert.ok(streamedDenial?.type === "egress", `no refused egress among the streamed events: ${JSON.stringify(events)}`);
    assert.deepEqual([streamedDenial.decision.host, streamedDenial.decision.port, streamedDenial.decision.reason], ["denied.test", 443, "not-allowed"]);
    const inResult = refused(last.result);
    assert.deepEqual(inResult.map((d) => [d.host, d.reason]), [["denied.test", "not-allowed"]]);
  });
});

test("the session's API errors come with their codes: a path outside /workspace, a missing file, a folder read as a file", async () => {
  await clientA.withSession("tsa", async (session) => {
    const outside = await apiError(() => session.write("../etc/passwd", "x"));
    assert.deepEqual([outside.status, outside.code], [400, "invalid_path"]);
    const missing = await apiError(() => session.read("nothing-here"));
    assert.deepEqual([missing.status, missing.code], [404, "file_not_found"]);
    await session.write("dir/a.txt", "a");
    const folder = await apiError(() => session.read("dir"));
    assert.deepEqual([folder.status, folder.code], [406, "not_acceptable"]);
  });
});

test("withSession closes the session when the work fails, and the work's failure is what the caller gets", async () => {
  let runId = "";
  await assert.rejects(
    clientA.withSession("tsa", async (session) => {
      runId = session.runId;
      throw new Error("the agent's work failed");
    }),
    /the agent's work failed/,
  );
  const run = await clientA.get(runId);
  assert.deepEqual([run.kind, run.status, run.end], ["session", "closed", "closed"]);
});

test("another agent's session does not exist for the token (404 run_not_found), and its own token resumes it", async () => {
  await clientB.withSession("tsb", async (theirs) => {
    const opened = await apiError(() => clientA.openSession("tsb"));
    assert.deepEqual([opened.status, opened.code], [404, "agent_not_listed"]);
    for (const [name, call] of [
      ["resumeSession", () => clientA.resumeSession(theirs.runId)],
      ["get", () => clientA.get(theirs.runId)],
      ["kill", () => clientA.kill(theirs.runId)],
    ] as const) {
      const error = await apiError(call);
      assert.deepEqual([error.status, error.code], [404, "run_not_found"], name);
    }
    assert.equal((await clientA.runs({ kind: "session" })).some((r) => r.run_id === theirs.runId), false);
    const resumed = await clientB.resumeSession(theirs.runId);
    assert.deepEqual([resumed.runId, resumed.agent, resumed.opened.status], [theirs.runId, "tsb", "running"]);
    const step = await resumed.exec(["sh", "-c", "echo still-mine"]);
    assert.deepEqual([step.exit_status, step.stdout], [0, "still-mine\n"]);
  });
});

test("a background step answers running with its number, is killed by that number and ends killed", async () => {
  await clientA.withSession("tsa", async (session) => {
    const started = await session.start(["sleep", "60"]);
    assert.deepEqual([started.status, started.background], ["running", true]);
    await session.killStep(started.step);
    let step = await session.step(started.step);
    for (let i = 0; i < 40 && step.status === "running"; i++) {
      await new Promise((r) => setTimeout(r, 250));
      step = await session.step(started.step);
    }
    assert.deepEqual([step.status, step.end], ["ended", "killed"]);
    const again = await apiError(() => session.killStep(started.step));
    assert.deepEqual([again.status, again.code], [409, "step_ended"]);
  });
});

test("await using on a session that idled out reads its result instead of failing the block", async () => {
  let held: Session;
  {
    await using session = await clientA.openSession("tsa", { idleSeconds: 1 });
    held = session;
    let run = await clientA.get(session.runId);
    for (let i = 0; i < 60 && run.end === null; i++) {
      await new Promise((r) => setTimeout(r, 250));
      run = await clientA.get(session.runId);
    }
    assert.equal(run.end, "idle", "the session did not idle out within 15 s");
  }
  assert.deepEqual([held.result?.status, held.result?.end], ["closed", "idle"]);
});
