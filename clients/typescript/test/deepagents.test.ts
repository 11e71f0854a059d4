// deepagents' own agent loop (createDeepAgent, its filesystem and execute tools) on
// AgentSandboxBackend: a scripted model from LangChain's own package asks for tools, and each tool
// call lands in the session's sandbox on the real serve (Docker), refusals and all.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { createDeepAgent } from "deepagents";
import { AgentSandboxBackend } from "../src/deepagents.js";
import { refused } from "../src/index.js";
import { clientA } from "./server.js";

const script = "echo hello from $1\n";
const command = "sh /workspace/greet.sh deepagents; curl -fsS -m 10 -o /dev/null http://denied.test/";

test("a deep agent's write_file, execute and read_file tool calls run in the session's sandbox", async () => {
  await using session = await clientA.openSession("tsa");
  const model = fakeModel()
    .respondWithTools([{ name: "write_file", args: { file_path: "/workspace/greet.sh", content: script }, id: "call-write" }])
    .respondWithTools([{ name: "execute", args: { command }, id: "call-execute" }])
    .respondWithTools([{ name: "read_file", args: { file_path: "/workspace/greet.sh" }, id: "call-read" }])
    .respond(new AIMessage("The greeting ran; denied.test is not on this agent's allow-list."));
  const backend = new AgentSandboxBackend(session);
  assert.equal(backend.id, session.runId);
  const agent = createDeepAgent({ model, backend });

  const state = await agent.invoke({ messages: [new HumanMessage("Write greet.sh, run it, then fetch http://denied.test/")] });

  const answers = new Map(state.messages.filter(ToolMessage.isInstance).map((m) => [m.tool_call_id, m.text]));
  assert.match(answers.get("call-write") ?? "", /Successfully wrote to '\/workspace\/greet\.sh'/);
  const executed = answers.get("call-execute") ?? "";
  assert.match(executed, /^hello from deepagents\n/);
  assert.match(executed, /egress to denied\.test:80 refused by the sandbox's proxy: not-allowed/);
  assert.match(executed, /\[Command failed with exit code 22\]$/, "curl -f exits 22 on the proxy's 403");
  assert.match(answers.get("call-read") ?? "", /echo hello from \$1/);
  assert.equal(state.messages.at(-1)?.text, "The greeting ran; denied.test is not on this agent's allow-list.");

  // The same session, seen through the API: the file the agent wrote, and its command as a step.
  assert.equal(await session.readText("/workspace/greet.sh"), script);
  const steps = await session.steps();
  const run = steps.find((s) => s.command.join(" ") === `sh -c ${command}`);
  assert.ok(run, `the execute tool's command is not among the session's steps: ${JSON.stringify(steps.map((s) => s.command))}`);
  const step = await session.step(run.step);
  assert.deepEqual(refused(step).map((d) => [d.host, d.port, d.reason]), [["denied.test", 80, "not-allowed"]]);
  assert.equal(steps.length >= 2, true, "read_file ran no step (BaseSandbox reads through execute)");
});

test("a file error of the session reaches deepagents as its own error code", async () => {
  await using session = await clientA.openSession("tsa");
  const backend = new AgentSandboxBackend(session);
  const [outside, missing] = await backend.downloadFiles(["/etc/passwd", "/workspace/nothing-here"]);
  assert.deepEqual(outside, { path: "/etc/passwd", content: null, error: "invalid_path" });
  assert.deepEqual(missing, { path: "/workspace/nothing-here", content: null, error: "file_not_found" });
  const [written] = await backend.uploadFiles([["/workspace/up.txt", new TextEncoder().encode("up")]]);
  assert.deepEqual(written, { path: "/workspace/up.txt", error: null });
  const [read] = await backend.downloadFiles(["/workspace/up.txt"]);
  assert.equal(new TextDecoder().decode(read?.content ?? new Uint8Array()), "up");
});
