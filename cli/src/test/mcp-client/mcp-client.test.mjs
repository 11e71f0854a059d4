// The MCP tools as a client nobody here wrote sees them: the official TypeScript SDK's Client, over
// both transports (stdio: `agent-sandbox mcp`; streamable HTTP: serve's /mcp), against a real
// serve with the Docker backend. McpClientIT starts everything and passes, in the environment:
//   API_URL       the control plane (http://127.0.0.1:PORT)
//   TOKEN_A_FILE  a token limited to agent mcpa (read, run)
//   TOKEN_B_FILE  a token limited to agent mcpb (read, run)
//   STDIO_JSON    the argument vector that starts `agent-sandbox mcp` with token A, as JSON
// Session tests run only when the server's OpenAPI document has the sessions path; until then
// each is reported as skipped with why.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const API = process.env.API_URL;
const tokenA = readFileSync(process.env.TOKEN_A_FILE, "utf8").trim();
const tokenB = readFileSync(process.env.TOKEN_B_FILE, "utf8").trim();
const stdio = JSON.parse(process.env.STDIO_JSON);
const SESSIONS = "/api/admin/platform/agent-sandbox/sessions";
const LONG = { timeout: 240_000 };

const openapi = await (await fetch(`${API}/api/openapi.json`)).json();
const sessionsServed = Object.hasOwn(openapi.paths ?? {}, SESSIONS);
const noSessions = sessionsServed
  ? false
  : `this server's /api/openapi.json has no ${SESSIONS} (sessions have not landed)`;

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
  const answer = await fetch(`${API}${path}`, {
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

    test("lists the seven tools, described with token A's agent's allow-list only", async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((t) => t.name).sort(),
        ["close_session", "exec", "list_files", "open_session", "read_file", "run_command", "write_file"],
      );
      const run = tools.find((t) => t.name === "run_command");
      assert.match(run.description, /Agent mcpa may reach: allowed\.test\./);
      assert.doesNotMatch(run.description, /mcpb/, "token A is limited to mcpa: mcpb is not its to know");
      assert.deepEqual(run.inputSchema.required, ["agent", "command"]);
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

    describe("sessions", { skip: noSessions }, () => {
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

      test("open, write, exec, read, list and close one session", async () => {
        const opened = await client.callTool({ name: "open_session", arguments: { agent: "mcpa" } }, undefined, LONG);
        assert.equal(opened.isError, false, text(opened));
        runId = opened.structuredContent.run_id;
        assert.match(runId, /^[a-z0-9]{1,32}$/);
        const written = await client.callTool({
          name: "write_file",
          arguments: { run_id: runId, path: "app/hello.sh", content: "echo hello $1\n" },
        });
        assert.equal(written.isError, false, text(written));
        assert.equal(written.structuredContent.size, 14);
        const step = await client.callTool(
          { name: "exec", arguments: { run_id: runId, command: ["sh", "hello.sh", "session"], cwd: "app" } },
          undefined,
          LONG,
        );
        assert.equal(step.isError, false, text(step));
        assert.equal(step.structuredContent.exit_status, 0);
        assert.match(step.structuredContent.stdout, /hello session/);
        const read = await client.callTool({ name: "read_file", arguments: { run_id: runId, path: "/workspace/app/hello.sh" } });
        assert.equal(text(read), "echo hello $1\n");
        const listed = await client.callTool({ name: "list_files", arguments: { run_id: runId, path: "app" } });
        assert.ok(listed.structuredContent.entries.some((e) => e.name === "hello.sh" && e.kind === "file"), text(listed));
        const closed = await client.callTool({ name: "close_session", arguments: { run_id: runId } }, undefined, LONG);
        assert.equal(closed.isError, false, text(closed));
        assert.equal(closed.structuredContent.end, "closed");
        const late = await client.callTool({ name: "exec", arguments: { run_id: runId, command: ["true"] } });
        assert.equal(late.isError, true);
        assert.equal(late.structuredContent.error, "run_ended", text(late));
      });

      test("a step refused egress names the host and the reason", async () => {
        const opened = await client.callTool({ name: "open_session", arguments: { agent: "mcpa" } }, undefined, LONG);
        const id = opened.structuredContent.run_id;
        try {
          const step = await client.callTool(
            { name: "exec", arguments: { run_id: id, command: ["sh", "-c", "curl -sS -m 10 -o /dev/null http://denied.test/"] } },
            undefined,
            LONG,
          );
          const refused = step.structuredContent.egress_refused.find((r) => r.host === "denied.test");
          assert.ok(refused, text(step));
          assert.equal(refused.reason, "not-allowed");
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
