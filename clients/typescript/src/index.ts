/**
 * Agent Sandbox's TypeScript client: runs and sessions over the admin API, fetch only.
 *
 *     import { Client, refused } from "@agent-sandbox/client";
 *     const client = new Client();                     // $AGENT_SANDBOX_URL, $AGENT_SANDBOX_TOKEN
 *     const run = await client.run("helper", ["sh", "-c", "echo hi"]);
 *     await using session = await client.openSession("helper");
 *     await session.write("app.py", "print('hi')\n");
 *     const step = await session.exec(["python3", "app.py"]);
 *
 * docs/clients.md has the whole surface; docs/api.md is the contract it follows.
 */

export { Client, type ClientOptions, type RunFilters, type RunOptions } from "./client.js";
export { ApiError } from "./errors.js";
export { Session, type SessionOptions, type StepOptions } from "./session.js";
export * from "./types.js";
export type { components, paths } from "./generated/openapi.js";
