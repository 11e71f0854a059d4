// The server test/run.mjs started for these tests, and a client for each of its two tokens.
import { Client } from "../src/index.js";

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value.length === 0) {
    throw new Error(`${name} is not set: run these tests with test/run.mjs (npm test), which starts a real serve for them`);
  }
  return value;
}

export const url = required("AGENT_SANDBOX_TEST_URL");
/** A token limited to agent tsa (allowed.test), and one limited to agent tsb (other.test). */
export const tokenA = required("AGENT_SANDBOX_TEST_TOKEN_A");
export const tokenB = required("AGENT_SANDBOX_TEST_TOKEN_B");
export const clientA = new Client({ url, token: tokenA });
export const clientB = new Client({ url, token: tokenB });
