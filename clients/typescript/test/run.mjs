// Starts a real serve for the tests — the packaged jar ($AGENT_SANDBOX_JAR, default
// cli/target/agent-sandbox.jar) on loopback with the Docker backend, two agents and a token limited
// to each — runs node's test runner over the compiled tests with the server in the environment,
// and stops the server. Everything lives in a temporary folder, removed at the end.
import { spawn, execFile } from "node:child_process";
import { access, mkdtemp, readFile, rm } from "node:fs/promises";
import { createWriteStream } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { once } from "node:events";
import { createInterface } from "node:readline";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const jar = process.env.AGENT_SANDBOX_JAR ?? join(root, "cli/target/agent-sandbox.jar");
const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, "bin/java") : "java";
const run = promisify(execFile);

async function main() {
  await access(jar).catch(() => {
    throw new Error(`start serve for the TypeScript client's tests: ${jar} is missing (build it: ./mvnw -pl cli -am package -DskipTests)`);
  });
  const folder = await mkdtemp(join(tmpdir(), "asb-typescript-"));
  const db = `jdbc:sqlite:${join(folder, "store.db")}`;
  const serve = spawn(java, ["-jar", jar, "serve", "--listen", "127.0.0.1:0", "--db", db,
    "--data-dir", join(folder, "data"), "--instance-id", `typescript-client-${process.pid}`], { stdio: ["ignore", "pipe", "pipe"] });
  // serve's log goes to a file, shown when the tests fail.
  const logFile = join(folder, "serve.log");
  serve.stderr.pipe(createWriteStream(logFile));
  let status = 1;
  const began = Date.now();
  try {
    const url = await listening(serve);
    const admin = (await readFile(join(folder, "data", "admin-token"), "utf8")).trim();
    const agent = { image: "agent-sandbox/workload:dev", ttl_seconds: 300, resources: { cpus: 1, memory_mb: 256, pids: 128 } };
    const config = await fetch(`${url}/api/admin/platform/agent-sandbox`, {
      method: "PUT",
      headers: { Authorization: `Bearer ${admin}`, "If-Match": '"0"', "Content-Type": "application/json" },
      body: JSON.stringify({ enabled: true, backend: "docker", reason: "TypeScript client tests",
        agents: { tsa: { ...agent, allow: ["allowed.test"] }, tsb: { ...agent, allow: ["other.test"] } } }),
    });
    if (!config.ok) throw new Error(`configure the test agents on ${url}: HTTP ${config.status} ${await config.text()}`);
    const [a, b] = await Promise.all([token(db, "ts-a", "tsa"), token(db, "ts-b", "tsb")]);
    console.log(`serve on ${url} with agents tsa and tsb and a token of each, ready after ${((Date.now() - began) / 1000).toFixed(1)} s`);
    const tests = process.argv.slice(2);
    const runner = spawn(process.execPath, ["--test", "--test-concurrency=3", ...(tests.length ? tests : defaultTests())], {
      stdio: "inherit",
      env: { ...process.env, AGENT_SANDBOX_TEST_URL: url, AGENT_SANDBOX_TEST_TOKEN_A: a, AGENT_SANDBOX_TEST_TOKEN_B: b },
    });
    const [code] = await once(runner, "exit");
    status = code ?? 1;
  } catch (failure) {
    console.error(failure instanceof Error ? failure.message : failure);
  } finally {
    const stopping = Date.now();
    serve.kill("SIGTERM");
    let bound;
    const stopped = await Promise.race([once(serve, "exit").then(() => true), new Promise((r) => (bound = setTimeout(r, 60_000, false)))]);
    clearTimeout(bound);
    if (stopped) console.log(`serve stopped ${((Date.now() - stopping) / 1000).toFixed(1)} s after SIGTERM`);
    else {
      console.error("serve did not stop within 60 s of SIGTERM: killed");
      serve.kill("SIGKILL");
    }
    if (status !== 0) {
      const log = await readFile(logFile, "utf8").catch(() => "");
      console.error(`serve's log (last 80 lines):\n${log.split("\n").slice(-80).join("\n")}`);
    }
    await rm(folder, { recursive: true, force: true });
  }
  process.exitCode = status;
}

function defaultTests() {
  const dir = fileURLToPath(new URL("../dist/test/", import.meta.url));
  return ["client", "session", "deepagents"].map((name) => join(dir, `${name}.test.js`));
}

function listening(serve) {
  // Every line is read to the end, so that serve's pipe never fills; the first that names the address answers.
  const lines = createInterface({ input: serve.stdout });
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error("start serve for the TypeScript client's tests: it did not say where it listens within 120 s")), 120_000);
    lines.on("line", (line) => {
      const found = /listening on (http:\/\/\S+)/.exec(line);
      if (found) {
        clearTimeout(deadline);
        resolve(found[1]);
      }
    });
    serve.on("exit", (code) => {
      clearTimeout(deadline);
      reject(new Error(`start serve for the TypeScript client's tests: it ended (exit ${code}) before it listened`));
    });
  });
}

async function token(db, name, agent) {
  const { stdout } = await run(java, ["-jar", jar, "token", "create", "--db", db, "--name", name,
    "--scopes", "agent_sandbox.read,agent_sandbox.run", "--agents", agent], { timeout: 120_000 });
  return stdout.trim();
}

await main();
