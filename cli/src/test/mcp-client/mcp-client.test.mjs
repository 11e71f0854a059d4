// The MCP tools as a client nobody here wrote sees them: the official TypeScript SDK's Client, over
// both transports (stdio: `agent-sandbox mcp`; streamable HTTP: serve's /mcp), against a real
// serve with the Docker backend. McpClientIT starts everything and passes, in the environment:
//   API_URL       the control plane (http://127.0.0.1:PORT)
//   CHECKED_URL   a relay to it that checks each exchange against openapi.json (CheckingRelay):
//                 this test's own admin-API calls go there; McpClientIT asserts none failed
//   TOKEN_A_FILE  a token limited to agent mcpa (read, run)
//   TOKEN_B_FILE  a token limited to agent mcpb (read, run)
//   STDIO_JSON    the argument vector that starts `agent-sandbox mcp` with token A, as JSON
// Each tool is driven end to end on the Docker backend: run_command, and a session opened, worked
// in (files written, steps run, files read and listed) and closed, with the API's refusals as tool
// errors; then /mcp's Origin check, and the MCP Inspector's CLI over both transports.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const API = process.env.API_URL;
const CHECKED = process.env.CHECKED_URL;
const tokenA = readFileSync(process.env.TOKEN_A_FILE, "utf8").trim();
const tokenB = readFileSync(process.env.TOKEN_B_FILE, "utf8").trim();
const stdio = JSON.parse(process.env.STDIO_JSON);
const SESSIONS = "/api/admin/platform/agent-sandbox/sessions";
const LONG = { timeout: 240_000 };
const execFileAsync = promisify(execFile);


async function connectHttp(token) {
  const client = new Client({ name: "mcp-client-it", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${API}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

async function connectStdio() {
  const client = new Client({ name: "mcp-client-it", version: "1.0.0" });
  const transport = new StdioClientTransport({
    command: stdio[0],
    args: stdio.slice(1),
    stderr: "inherit",
  });
  await client.connect(transport);
  return client;
}

function text(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function api(method, path, token, body) {
  const answer = await fetch(`${CHECKED}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: answer.status, body: await answer.json() };
}

for (const transport of ["http", "stdio"]) {
  describe(`over ${transport}`, () => {
    let client;
    before(async () => {
      client = transport === "http" ? await connectHttp(tokenA) : await connectStdio();
    });
    after(async () => {
      await client?.close();
    });

    test("lists the seven tools, described with token A's agent's effective allow-list only", async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((t) => t.name).sort(),
        ["close_session", "exec", "list_files", "open_session", "read_file", "run_command", "write_file"],
      );
      // mcpa's own list is allowed.test and narrowed.test; the instance egress policy lets its scope
      // reach allowed.test only, so that is all a model is told it may reach.
      for (const name of ["run_command", "open_session", "exec"]) {
        const tool = tools.find((t) => t.name === name);
        assert.match(tool.description, /Agent mcpa may reach: allowed\.test\.$/, `${name}: ${tool.description}`);
        assert.doesNotMatch(tool.description, /narrowed\.test/, `${name}: the instance policy removed it`);
        assert.doesNotMatch(tool.description, /mcpb|other\.test/, `${name}: token A is limited to mcpa`);
      }
      assert.deepEqual(tools.find((t) => t.name === "run_command").inputSchema.required, ["agent", "command"]);
    });

    test("run_command answers the exit status, the output's tail and a refused host with its reason", async () => {
      const result = await client.callTool(
        {
          name: "run_command",
          arguments: {
            agent: "mcpa",
            command: ["sh", "-c", "echo hello-from-mcp; curl -sS -m 10 -o /dev/null http://denied.test/; exit 3"],
            labels: { "task-ref": `mcp-${transport}` },
          },
        },
        undefined,
        LONG,
      );
      assert.equal(result.isError, false, text(result));
      assert.equal(result.structuredContent.exit_status, 3, text(result));
      assert.match(result.structuredContent.output_tail, /hello-from-mcp/);
      const refused = result.structuredContent.egress_refused.find((r) => r.host === "denied.test");
      assert.ok(refused, `no refusal of denied.test in ${JSON.stringify(result.structuredContent)}`);
      assert.equal(refused.reason, "not-allowed");
      assert.equal(refused.retry_may_help, false);
      assert.match(text(result), /denied\.test(:80)? refused \(not-allowed\): the host is not on the agent's egress allow-list/);
      assert.match(text(result), /exit status 3/);
    });

    test("run_command for an agent the token may not use is a tool error with the API's code", async () => {
      const result = await client.callTool(
        { name: "run_command", arguments: { agent: "mcpb", command: ["true"] } },
        undefined,
        LONG,
      );
      assert.equal(result.isError, true);
      assert.equal(result.structuredContent.error, "agent_not_listed", text(result));
      assert.match(text(result), /^agent_not_listed: /);
    });

    test("a malformed argument is a tool error naming it, not a dropped connection", async () => {
      const result = await client.callTool({ name: "exec", arguments: { run_id: "../../token", command: ["true"] } });
      assert.equal(result.isError, true);
      assert.match(text(result), /not a run id/);
      const after = await client.listTools();
      assert.equal(after.tools.length, 7, "the connection still answers");
    });

    describe("sessions", () => {
      let runId;
      let other;
      before(async () => {
        const opened = await api("POST", SESSIONS, tokenB, { agent: "mcpb" });
        assert.equal(opened.status, 201, JSON.stringify(opened.body));
        other = opened.body.run_id;
      });
      after(async () => {
        if (other) await api("DELETE", `/api/admin/platform/agent-sandbox/runs/${other}`, tokenB);
      });

      test("open, write, exec, read, list and close one session; its errors are tool errors with the API's code", async () => {
        const opened = await client.callTool(
          { name: "open_session", arguments: { agent: "mcpa", labels: { "task-ref": `mcp-session-${transport}` } } },
          undefined,
          LONG,
        );
        assert.equal(opened.isError, false, text(opened));
        runId = opened.structuredContent.run_id;
        assert.match(runId, /^[a-z0-9]{1,32}$/);
        assert.equal(opened.structuredContent.agent, "mcpa");
        assert.equal(opened.structuredContent.status, "running");
        assert.match(text(opened), new RegExp(`^session ${runId} is open for agent mcpa`));

        const written = await client.callTool({
          name: "write_file",
          arguments: { run_id: runId, path: "app/hello.sh", content: "echo hello $1\n" },
        });
        assert.equal(written.isError, false, text(written));
        assert.equal(written.structuredContent.path, "/workspace/app/hello.sh", text(written));
        assert.equal(written.structuredContent.size, 14);
        assert.equal(
          written.structuredContent.sha256,
          createHash("sha256").update("echo hello $1\n").digest("hex"),
        );

        // One step: the file the tool wrote runs, both streams and the exit status come back, and
        // what the step writes is there for the next tool.
        const step = await client.callTool(
          {
            name: "exec",
            arguments: {
              run_id: runId,
              command: ["sh", "-c", "sh hello.sh \"$1\"; echo to-stderr >&2; cat > made.txt; exit 5", "sh", "session"],
              cwd: "app",
              stdin: "made by the step\n",
            },
          },
          undefined,
          LONG,
        );
        assert.equal(step.isError, false, text(step));
        assert.equal(step.structuredContent.step, 1, text(step));
        assert.equal(step.structuredContent.end, "exit", text(step));
        assert.equal(step.structuredContent.exit_status, 5, text(step));
        assert.equal(step.structuredContent.cwd, "/workspace/app");
        assert.equal(step.structuredContent.stdout, "hello session\n");
        assert.equal(step.structuredContent.stderr, "to-stderr\n");
        assert.deepEqual(step.structuredContent.egress_refused, []);
        assert.match(text(step), /^step 1 ended: exit, exit status 5, \d+ ms\nstdout:\nhello session\nstderr:\nto-stderr\n$/);

        const read = await client.callTool({ name: "read_file", arguments: { run_id: runId, path: "/workspace/app/made.txt" } });
        assert.equal(read.isError, false, text(read));
        assert.equal(text(read), "made by the step\n");
        assert.equal(read.structuredContent.size, 17);
        const again = await client.callTool({ name: "read_file", arguments: { run_id: runId, path: "app/hello.sh" } });
        assert.equal(text(again), "echo hello $1\n");

        const listed = await client.callTool({ name: "list_files", arguments: { run_id: runId, path: "app" } });
        assert.equal(listed.isError, false, text(listed));
        assert.equal(listed.structuredContent.path, "/workspace/app", text(listed));
        const names = listed.structuredContent.entries.map((e) => `${e.kind} ${e.name} ${e.size}`).sort();
        assert.deepEqual(names, ["file hello.sh 14", "file made.txt 17"], text(listed));
        assert.match(text(listed), /^\/workspace\/app:\n/);
        const top = await client.callTool({ name: "list_files", arguments: { run_id: runId } });
        assert.ok(top.structuredContent.entries.some((e) => e.name === "app" && e.kind === "folder"), text(top));

        // The API's refusals of a live session, each a tool error with its code; the connection stays.
        for (const [name, args, code, status] of [
          ["read_file", { run_id: runId, path: "app/missing.txt" }, "file_not_found", 404],
          ["write_file", { run_id: runId, path: "../etc/passwd", content: "x" }, "invalid_path", 400],
          ["exec", { run_id: runId, command: ["true"], cwd: "/etc" }, "invalid_path", 400],
          ["list_files", { run_id: runId, path: "app/hello.sh" }, "path_refused", 400],
        ]) {
          const refused = await client.callTool({ name, arguments: args });
          assert.equal(refused.isError, true, `${name}: ${text(refused)}`);
          assert.equal(refused.structuredContent.error, code, `${name}: ${text(refused)}`);
          assert.equal(refused.structuredContent.status, status, `${name}: ${text(refused)}`);
          assert.match(text(refused), new RegExp(`^${code}: `));
        }

        const closed = await client.callTool({ name: "close_session", arguments: { run_id: runId } }, undefined, LONG);
        assert.equal(closed.isError, false, text(closed));
        assert.equal(closed.structuredContent.kind, "session", text(closed));
        assert.equal(closed.structuredContent.end, "closed", text(closed));
        assert.match(text(closed), new RegExp(`^session ${runId} of agent mcpa ended: closed`));
        assert.match(closed.structuredContent.output_tail, /hello session/, "the session's output is all its steps'");

        // Once closed, every session tool is the API's run_ended (409), as a tool error.
        for (const [name, args] of [
          ["exec", { run_id: runId, command: ["true"] }],
          ["write_file", { run_id: runId, path: "x", content: "x" }],
          ["read_file", { run_id: runId, path: "app/hello.sh" }],
          ["list_files", { run_id: runId }],
          ["close_session", { run_id: runId }],
        ]) {
          const late = await client.callTool({ name, arguments: args }, undefined, LONG);
          assert.equal(late.isError, true, `${name}: ${text(late)}`);
          assert.equal(late.structuredContent.error, "run_ended", `${name}: ${text(late)}`);
          assert.equal(late.structuredContent.status, 409, `${name}: ${text(late)}`);
        }
        const still = await client.listTools();
        assert.equal(still.tools.length, 7, "the connection still answers after the tool errors");
      });

      test("a step refused egress names each host and the reason", async () => {
        const opened = await client.callTool({ name: "open_session", arguments: { agent: "mcpa" } }, undefined, LONG);
        assert.equal(opened.isError, false, text(opened));
        const id = opened.structuredContent.run_id;
        try {
          const step = await client.callTool(
            {
              name: "exec",
              arguments: {
                run_id: id,
                command: [
                  "sh",
                  "-c",
                  // The step lingers a second after its last refusal: the exec API answers when
                  // the command exits, and a decision the proxy reports after that is attributed
                  // to the step (GET .../steps/{n}) but misses the answer already sent.
                  "curl -sS -m 10 -o /dev/null http://denied.test/; curl -sS -m 10 -o /dev/null http://narrowed.test/; sleep 1; exit 7",
                ],
              },
            },
            undefined,
            LONG,
          );
          assert.equal(step.isError, false, text(step));
          assert.equal(step.structuredContent.exit_status, 7, text(step));
          const refused = step.structuredContent.egress_refused;
          const denied = refused.find((r) => r.host === "denied.test");
          assert.ok(denied, text(step));
          assert.equal(denied.reason, "not-allowed");
          assert.equal(denied.retry_may_help, false);
          const narrowed = refused.find((r) => r.host === "narrowed.test");
          assert.ok(narrowed, `narrowed.test, on mcpa's own list but not the instance policy's: ${text(step)}`);
          assert.equal(narrowed.reason, "instance-policy");
          assert.match(text(step), /egress refused \(\d+ connections\):\n/);
          assert.match(text(step), /- denied\.test:80 refused \(not-allowed\): the host is not on the agent's egress allow-list.* Retrying will not help\./);
          assert.match(text(step), /- narrowed\.test:80 refused \(instance-policy\): the organisation's egress policy does not allow this host/);
        } finally {
          await client.callTool({ name: "close_session", arguments: { run_id: id } }, undefined, LONG);
        }
      });

      test("token A's tools answer agent B's session as no run", async () => {
        for (const [name, args] of [
          ["exec", { run_id: other, command: ["true"] }],
          ["write_file", { run_id: other, path: "x", content: "x" }],
          ["read_file", { run_id: other, path: "x" }],
          ["list_files", { run_id: other }],
          ["close_session", { run_id: other }],
        ]) {
          const result = await client.callTool({ name, arguments: args }, undefined, LONG);
          assert.equal(result.isError, true, `${name}: ${text(result)}`);
          assert.equal(result.structuredContent.error, "run_not_found", `${name}: ${text(result)}`);
        }
      });
    });
  });
}

test("streamable HTTP refuses a request without a valid token (401, nothing served)", async () => {
  await assert.rejects(connectHttp("asb_not_a_token"), /401|invalid_token/);
});

// MCP streamable HTTP, Security Warning: the Origin header is validated against DNS rebinding. A
// browser page of another origin that holds a valid token (the worst case) is refused with 403
// before anything is served; the server's own origin, and no Origin at all, are served.
test("/mcp refuses a foreign Origin with 403 and serves its own origin and none", async () => {
  const list = { jsonrpc: "2.0", id: 1, method: "tools/list" };
  const post = (origin) =>
    fetch(`${API}/mcp`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${tokenA}`,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        ...(origin === undefined ? {} : { Origin: origin }),
      },
      body: JSON.stringify(list),
    });
  const port = new URL(API).port;
  for (const origin of ["http://evil.test", `http://evil.test:${port}`, `http://127.0.0.1:${Number(port) + 1}`, "null"]) {
    const answer = await post(origin);
    const body = await answer.json();
    assert.equal(answer.status, 403, `${origin}: ${JSON.stringify(body)}`);
    assert.equal(body.error, "origin_refused", origin);
    assert.equal(body.result, undefined, `${origin}: no tool is listed`);
  }
  for (const origin of [undefined, new URL(API).origin, `http://localhost:${port}`]) {
    const answer = await post(origin);
    const body = await answer.json();
    assert.equal(answer.status, 200, `${origin}: ${JSON.stringify(body)}`);
    assert.equal(body.result.tools.length, 7, `${origin}: ${JSON.stringify(body)}`);
  }
});

// The MCP Inspector's CLI (@modelcontextprotocol/inspector --cli, pinned in package-lock.json):
// another client nobody here wrote lists the tools and runs a step over each transport.
describe("the MCP Inspector's CLI", () => {
  const inspector = new URL("./node_modules/@modelcontextprotocol/inspector/cli/build/cli.js", import.meta.url).pathname;
  let session;
  before(async () => {
    const opened = await api("POST", SESSIONS, tokenA, { agent: "mcpa", labels: { "task-ref": "mcp-inspector" } });
    assert.equal(opened.status, 201, JSON.stringify(opened.body));
    session = opened.body.run_id;
  });
  after(async () => {
    if (session) await api("DELETE", `/api/admin/platform/agent-sandbox/runs/${session}`, tokenA);
  });

  const targets = {
    stdio: () => [...stdio],
    http: () => [`${API}/mcp`, "--transport", "http", "--header", `Authorization: Bearer ${tokenA}`],
  };
  for (const [transport, target] of Object.entries(targets)) {
    test(`over ${transport}: tools/list and tools/call exec`, LONG, async () => {
      const listed = await inspect(inspector, [...target(), "--method", "tools/list"]);
      assert.deepEqual(
        listed.tools.map((t) => t.name).sort(),
        ["close_session", "exec", "list_files", "open_session", "read_file", "run_command", "write_file"],
      );
      assert.match(listed.tools.find((t) => t.name === "exec").description, /Agent mcpa may reach: allowed\.test\./);
      const called = await inspect(inspector, [
        ...target(),
        "--method",
        "tools/call",
        "--tool-name",
        "exec",
        "--tool-arg",
        `run_id=${session}`,
        `command=${JSON.stringify(["sh", "-c", `echo inspector-${transport}; exit 6`])}`,
      ]);
      assert.equal(called.isError, false, JSON.stringify(called));
      assert.equal(called.structuredContent.exit_status, 6, JSON.stringify(called));
      assert.equal(called.structuredContent.stdout, `inspector-${transport}\n`);
    });
  }
});

/** Runs the Inspector's CLI with `args` (bounded in time) and answers the JSON it printed. */
async function inspect(cli, args) {
  const { stdout } = await execFileAsync(process.execPath, [cli, "--cli", ...args], {
    timeout: 180_000,
    maxBuffer: 4 * 1024 * 1024,
    env: { ...process.env, NO_COLOR: "1" },
  });
  return JSON.parse(stdout);
}
