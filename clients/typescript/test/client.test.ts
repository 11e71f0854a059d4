// The client's runs against a real serve on Docker: results, refusals, the stream, the API's errors,
// another agent's run, and where the token may go.
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { inspect } from "node:util";
import { ApiError, Client, refused, type OutputEvent } from "../src/index.js";
import { clientA, clientB, tokenA, url } from "./server.js";

async function apiError(call: () => Promise<unknown>): Promise<ApiError> {
  try {
    await call();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  assert.fail("the call answered, where the API should have refused it");
}

test("a run answers its exit status, its output and the refused host with the proxy's reason", async () => {
  const result = await clientA.run("tsa", ["sh", "-c", "echo hello-typescript; curl -sS -m 10 -o /dev/null http://denied.test/; exit 3"]);
  assert.equal(result.exit_status, 3, JSON.stringify(result));
  assert.equal(result.end, "exit");
  assert.match(result.output_tail, /hello-typescript/);
  const denied = refused(result).filter((d) => d.host === "denied.test");
  assert.equal(denied.length > 0, true, JSON.stringify(result.egress));
  assert.equal(denied[0]?.reason, "not-allowed");
});

test("a run's output streams line by line, each line with its stream", async () => {
  const runId = await clientA.start("tsa", ["sh", "-c", "echo one; echo two >&2; echo three"]);
  const events: OutputEvent[] = [];
  for await (const event of clientA.output(runId)) events.push(event);
  assert.deepEqual(events.filter((e) => e.type === "stdout").map((e) => e.type === "stdout" && e.text), ["one\n", "three\n"]);
  assert.deepEqual(events.filter((e) => e.type === "stderr"), [{ type: "stderr", text: "two\n" }]);
  assert.equal((await clientA.get(runId)).exit_status, 0);
});

test("a run of an agent the token is not limited to is refused as an unlisted agent (404 agent_not_listed)", async () => {
  const error = await apiError(() => clientA.run("tsb", ["true"]));
  assert.equal(error.status, 404);
  assert.equal(error.code, "agent_not_listed");
  assert.equal(error.body.error, "agent_not_listed");
});

test("another agent's run does not exist for the token: get, kill and output answer 404 run_not_found", async () => {
  const runId = await clientB.start("tsb", ["sh", "-c", "sleep 30"]);
  try {
    for (const call of [() => clientA.get(runId), () => clientA.kill(runId), async () => { for await (const _ of clientA.output(runId)) { /* none */ } }]) {
      const error = await apiError(call);
      assert.deepEqual([error.status, error.code], [404, "run_not_found"]);
    }
    assert.equal((await clientA.runs()).some((r) => r.run_id === runId), false, "listed to the other agent's token");
    assert.equal((await clientB.runs({ agent: "tsb" })).some((r) => r.run_id === runId), true, "not listed to its own agent's token");
  } finally {
    await clientB.kill(runId);
  }
});

test("a bad token is 401 invalid_token; a run id that is not one is refused before any request", async () => {
  const error = await apiError(() => new Client({ url, token: "asb_not_a_token" }).whoami());
  assert.deepEqual([error.status, error.code], [401, "invalid_token"]);
  await assert.rejects(() => clientA.get("../token"), (e: unknown) => e instanceof TypeError && /is not a run id/.test(e.message));
  const self = await clientA.whoami();
  assert.deepEqual([self.name, self.agents], ["ts-a", ["tsa"]]);
});

test("the token appears in no rendering of the client and no error", async () => {
  const shown = [inspect(clientA, { showHidden: true, depth: 5 }), String(clientA), JSON.stringify(clientA)].join("\n");
  assert.equal(shown.includes(tokenA), false, shown);
  const error = await apiError(() => clientA.get("aaaaaaaaaaaaaaaaaaaa"));
  assert.equal(error.code, "run_not_found");
  assert.equal(inspect(error, { depth: 5 }).includes(tokenA), false);
});

test("a redirect is refused, never followed: the token goes to the client's URL only", async () => {
  const seen: IncomingHttpHeaders[] = [];
  const elsewhere = createServer((request, response) => {
    seen.push(request.headers);
    response.end("{}");
  });
  const redirecting = createServer((_, response) => {
    const { port } = elsewhere.address() as AddressInfo;
    response.writeHead(307, { Location: `http://127.0.0.1:${port}/api/admin/platform/token` }).end();
  });
  await Promise.all([new Promise<void>((r) => elsewhere.listen(0, "127.0.0.1", r)), new Promise<void>((r) => redirecting.listen(0, "127.0.0.1", r))]);
  try {
    const { port } = redirecting.address() as AddressInfo;
    const error = await apiError(() => new Client({ url: `http://127.0.0.1:${port}`, token: tokenA }).whoami());
    assert.equal(error.status, 0);
    assert.equal(error.code, "unreachable");
    assert.match(error.message, /redirect/);
    assert.equal(seen.length, 0, `the redirect was followed: ${JSON.stringify(seen)}`);
  } finally {
    elsewhere.close();
    redirecting.close();
  }
});

test("a server that is not there is ApiError unreachable, naming the URL", async () => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
  const { port } = closed.address() as AddressInfo;
  await new Promise<void>((r) => closed.close(() => r()));
  const error = await apiError(() => new Client({ url: `http://127.0.0.1:${port}`, token: tokenA }).whoami());
  assert.deepEqual([error.status, error.code], [0, "unreachable"]);
  assert.match(error.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
});
