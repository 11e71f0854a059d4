/** The admin API's runs for one server and one token, and the door to sessions. */

import { ApiError } from "./errors.js";
import { Session, type SessionOptions } from "./session.js";
import { type OutputEvent, outputEvent, type Run, type RunRequest, type RunSummary, type TokenSelf } from "./types.js";
import { checkCommand, checkRunId, ROUTES, SANDBOX_MS, SHORT_MS, Wire } from "./wire.js";

export interface ClientOptions {
  /** The server; default `$AGENT_SANDBOX_URL`, else http://127.0.0.1:8080. */
  readonly url?: string;
  /** The bearer token; default `$AGENT_SANDBOX_TOKEN`. Sent to `url` only, never in a message. */
  readonly token?: string;
  /** A fetch to use instead of the global one. */
  readonly fetch?: typeof fetch;
}

export interface RunOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly labels?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
}

/** The filters of `GET .../runs` (docs/api.md, Plans and runs). */
export interface RunFilters {
  readonly agent?: string;
  readonly status?: string;
  readonly kind?: "run" | "session";
  readonly since?: string;
  readonly label?: string;
  readonly limit?: number;
}

/** The admin API for one server and one token; thread-safe in the sense that matters here: calls may overlap. */
export class Client {
  readonly #wire: Wire;

  constructor(options: ClientOptions = {}) {
    // globalThis.process: the environment where there is one (Node.js, Deno, Bun), none in a browser.
    const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env ?? {};
    const token = options.token ?? env.AGENT_SANDBOX_TOKEN;
    if (token === undefined || token.trim().length === 0) {
      throw new TypeError("no token: pass { token } or set AGENT_SANDBOX_TOKEN (agent-sandbox token create prints one)");
    }
    const url = options.url ?? env.AGENT_SANDBOX_URL ?? "http://127.0.0.1:8080";
    this.#wire = new Wire(url, token.trim(), options.fetch ?? globalThis.fetch);
  }

  get url(): string {
    return this.#wire.url;
  }

  /** Who the token is: its name, scopes and the agents it is limited to. */
  whoami(signal?: AbortSignal): Promise<TokenSelf> {
    return this.#wire.json({ method: "GET", route: ROUTES.token, action: "read the token", timeoutMs: SHORT_MS, signal });
  }

  /** Runs `command` in a new sandbox of `agent` and answers once the run has ended (its exit status, output tail, egress). */
  run(agent: string, command: readonly string[], options: RunOptions = {}): Promise<Run> {
    return this.#wire.json({
      method: "POST", route: ROUTES.run, json: runRequest(agent, command, options),
      action: `run a command of agent ${agent}`, timeoutMs: null, signal: options.signal,
    });
  }

  /** Starts a run and answers its id at once; follow it with `get`, `output` and `kill`. */
  async start(agent: string, command: readonly string[], options: RunOptions = {}): Promise<string> {
    const started = await this.#wire.json<{ run_id: string }>({
      method: "POST", route: ROUTES.runs, json: runRequest(agent, command, options),
      action: `start a run of agent ${agent}`, timeoutMs: SANDBOX_MS, signal: options.signal,
    });
    return started.run_id;
  }

  get(runId: string, signal?: AbortSignal): Promise<Run> {
    return this.#wire.json({ method: "GET", route: ROUTES.runById, params: { id: runId }, action: `read run ${runId}`, timeoutMs: SHORT_MS, signal });
  }

  /** The newest runs the token may see, newest first. */
  async runs(filters: RunFilters = {}, signal?: AbortSignal): Promise<RunSummary[]> {
    const list = await this.#wire.json<{ runs: RunSummary[] }>({
      method: "GET", route: ROUTES.runs, query: { ...filters }, action: "list runs", timeoutMs: SHORT_MS, signal,
    });
    return list.runs;
  }

  /** Kills a live run (a session is closed instead: `Session.close`). */
  async kill(runId: string, signal?: AbortSignal): Promise<void> {
    await this.#wire.json({ method: "DELETE", route: ROUTES.runById, params: { id: checkRunId(runId) }, action: `kill run ${runId}`, timeoutMs: SANDBOX_MS, signal });
  }

  /** The run's redacted output, line by line as it is written, until the run ends. */
  async *output(runId: string, signal?: AbortSignal): AsyncGenerator<OutputEvent, void, undefined> {
    const lines = this.#wire.lines({ method: "GET", route: ROUTES.output, params: { id: checkRunId(runId) }, action: `follow run ${runId}`, timeoutMs: null, signal });
    for await (const line of lines) {
      const event = outputEvent(line);
      if (event !== undefined) yield event;
    }
  }

  /** Opens a session of `agent` (docs/api.md, Sessions); close it, or hold it with `await using`. */
  openSession(agent: string, options: SessionOptions = {}): Promise<Session> {
    return Session.open(this.#wire, agent, options);
  }

  /** A handle on a live session of this token's agents, by its run id (404 `run_not_found` for any other). */
  resumeSession(runId: string, signal?: AbortSignal): Promise<Session> {
    return Session.resume(this.#wire, runId, signal);
  }

  /**
   * Opens a session, hands it to `work` and closes it whatever `work` does; answers what `work`
   * answered. A failure of `work` wins over one of the close, and both are kept when both fail.
   */
  async withSession<T>(agent: string, work: (session: Session) => Promise<T>, options: SessionOptions = {}): Promise<T> {
    const session = await this.openSession(agent, options);
    let result: T;
    try {
      result = await work(session);
    } catch (failure) {
      try {
        await session.close();
      } catch (closeFailure) {
        throw new AggregateError([failure, closeFailure], `work in session ${session.runId} failed, and closing it failed too`);
      }
      throw failure;
    }
    await session.close();
    return result;
  }

  /** Never the token. */
  toString(): string {
    return `Client(${this.url})`;
  }
}

function runRequest(agent: string, command: readonly string[], options: RunOptions): RunRequest {
  if (typeof agent !== "string" || agent.length === 0) throw new TypeError("name the agent whose sandbox runs the command");
  return {
    agent,
    command: checkCommand(command),
    ...(options.env === undefined ? {} : { env: { ...options.env } }),
    ...(options.labels === undefined ? {} : { labels: { ...options.labels } }),
  };
}

export { ApiError };
