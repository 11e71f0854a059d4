/** A session (docs/api.md, Sessions): steps, file puts and gets in one sandbox until it is closed. */

import { ApiError } from "./errors.js";
import { type EgressDecision, type ExecRequest, type FileEntry, type FileListing, type FileWritten, outputEvent, type Run, type SessionRequest, type Step, type StepEvent } from "./types.js";
import { checkCommand, ROUTES, SANDBOX_MS, SHORT_MS, type Wire } from "./wire.js";

export interface SessionOptions {
  /** Every step's variables; screened as a run's, their values redacted. */
  readonly env?: Readonly<Record<string, string>>;
  readonly labels?: Readonly<Record<string, string>>;
  /** 1 to the agent's ttl_seconds; the server's default is 300. */
  readonly idleSeconds?: number;
  readonly signal?: AbortSignal;
}

export interface StepOptions {
  readonly env?: Readonly<Record<string, string>>;
  /** A folder inside /workspace, absolute or relative to it (default /workspace). */
  readonly cwd?: string;
  /** UTF-8 text the step reads on its standard input, then end of file. */
  readonly stdin?: string;
  readonly timeoutSeconds?: number;
  readonly signal?: AbortSignal;
}

/**
 * One open session. `await using session = await client.openSession("helper")` closes it when the
 * block ends; so does `client.withSession(...)`. Steps may overlap (at most 8 run at once).
 */
export class Session implements AsyncDisposable {
  readonly #wire: Wire;
  /** The session's run id: its record, timeline and audit rows. */
  readonly runId: string;
  readonly agent: string;
  /** The session as it was opened or resumed (backend, runtime, isolation, deadline, idle time). */
  readonly opened: Run;
  #result: Run | undefined;

  private constructor(wire: Wire, opened: Run) {
    this.#wire = wire;
    this.runId = opened.run_id;
    this.agent = opened.agent;
    this.opened = opened;
  }

  /** Opens a session of `agent` once its sandbox is ready for a step. */
  static async open(wire: Wire, agent: string, options: SessionOptions = {}): Promise<Session> {
    if (typeof agent !== "string" || agent.length === 0) throw new TypeError("name the agent whose sandbox the session opens");
    const request: SessionRequest = {
      agent,
      ...(options.env === undefined ? {} : { env: { ...options.env } }),
      ...(options.labels === undefined ? {} : { labels: { ...options.labels } }),
      ...(options.idleSeconds === undefined ? {} : { idle_seconds: options.idleSeconds }),
    };
    const opened = await wire.json<Run>({
      method: "POST", route: ROUTES.sessions, json: request, action: `open a session of agent ${agent}`,
      timeoutMs: SANDBOX_MS, signal: options.signal,
    });
    return new Session(wire, opened);
  }

  /** A handle on a session opened elsewhere (another process, an earlier handle), read from `GET .../runs/{id}`. */
  static async resume(wire: Wire, runId: string, signal?: AbortSignal): Promise<Session> {
    const run = await wire.json<Run>({ method: "GET", route: ROUTES.runById, params: { id: runId }, action: `read session ${runId}`, timeoutMs: SHORT_MS, signal });
    if (run.kind !== "session") {
      throw new ApiError(409, "not_a_session", `resume session ${runId}: it is a one-shot run, not a session (follow it with get and output)`);
    }
    if (run.end !== null) {
      throw new ApiError(409, "run_ended", `resume session ${runId}: it has ended (${run.end}); its steps stay readable, its files are in the run's artifacts`);
    }
    return new Session(wire, run);
  }

  /** The session's result once `close` (or disposal) has ended it; undefined while open. */
  get result(): Run | undefined {
    return this.#result;
  }

  /** Runs one step and answers its result: exit status, stdout and stderr tails, egress decisions. */
  exec(command: readonly string[], options: StepOptions = {}): Promise<Step> {
    return this.#wire.json({
      method: "POST", route: ROUTES.exec, params: { id: this.runId }, json: stepRequest(command, options, false),
      action: `run a step in session ${this.runId}`, timeoutMs: null, signal: options.signal,
    });
  }

  /** Starts a step in the background and answers it running; read it with `step(n)`, stop it with `killStep(n)`. */
  start(command: readonly string[], options: StepOptions = {}): Promise<Step> {
    return this.#wire.json({
      method: "POST", route: ROUTES.exec, params: { id: this.runId }, json: stepRequest(command, options, true),
      action: `start a step in session ${this.runId}`, timeoutMs: SHORT_MS, signal: options.signal,
    });
  }

  /**
   * Runs one step, yielding its events as they happen and ending with its `result`. Breaking out of
   * the loop closes the stream; the step goes on (kill it with `killStep`). A stream cut before the
   * result throws ApiError `stream_cut` naming the step, which `step(n)` then reads.
   */
  async *stream(command: readonly string[], options: StepOptions = {}): AsyncGenerator<StepEvent, Step, undefined> {
    let number: number | undefined;
    const lines = this.#wire.lines({
      method: "POST", route: ROUTES.exec, params: { id: this.runId }, json: stepRequest(command, options, false),
      action: `run a step in session ${this.runId}`, timeoutMs: null, signal: options.signal,
    });
    for await (const line of lines) {
      if (line.result !== undefined) {
        const result = line.result as Step;
        yield { type: "result", result };
        return result;
      }
      if (typeof line.step === "number") {
        number = line.step;
        yield { type: "started", step: line.step };
      } else if (line.egress !== undefined) {
        yield { type: "egress", decision: line.egress as EgressDecision };
      } else {
        const event = outputEvent(line);
        if (event !== undefined) yield event;
      }
    }
    const which = number === undefined ? "before it had a number" : `at step ${number} (read it with step(${number}))`;
    throw new ApiError(0, "stream_cut", `run a step in session ${this.runId}: the stream ended without the step's result, ${which}`);
  }

  /** One step: running, or its result. */
  step(n: number, signal?: AbortSignal): Promise<Step> {
    return this.#wire.json({ method: "GET", route: ROUTES.step, params: { id: this.runId, n }, action: `read step ${n} of session ${this.runId}`, timeoutMs: SHORT_MS, signal });
  }

  /** The session's steps in order, as summaries (without their output and egress). */
  async steps(signal?: AbortSignal): Promise<Step[]> {
    const list = await this.#wire.json<{ steps: Step[] }>({ method: "GET", route: ROUTES.steps, params: { id: this.runId }, action: `list the steps of session ${this.runId}`, timeoutMs: SHORT_MS, signal });
    return list.steps;
  }

  /** Kills one running step (409 `step_ended` once it has ended). */
  async killStep(n: number, signal?: AbortSignal): Promise<void> {
    await this.#wire.json({ method: "DELETE", route: ROUTES.step, params: { id: this.runId, n }, action: `kill step ${n} of session ${this.runId}`, timeoutMs: SHORT_MS, signal });
  }

  /** Writes a file under /workspace (whole or not at all; parent folders made), replacing one there. */
  write(path: string, content: string | Uint8Array, signal?: AbortSignal): Promise<FileWritten> {
    const body = typeof content === "string" ? new TextEncoder().encode(content) : content;
    return this.#wire.json({
      method: "PUT", route: ROUTES.files, params: { id: this.runId }, query: { path }, body, contentType: "application/octet-stream",
      action: `write ${path} in session ${this.runId}`, timeoutMs: SANDBOX_MS, signal,
    });
  }

  /** Extracts a tar under the folder `path` (checked whole first: one bad entry refuses it all). */
  writeTar(path: string, tar: Uint8Array, signal?: AbortSignal): Promise<FileWritten> {
    return this.#wire.json({
      method: "PUT", route: ROUTES.files, params: { id: this.runId }, query: { path }, body: tar, contentType: "application/x-tar",
      action: `extract a tar under ${path} in session ${this.runId}`, timeoutMs: SANDBOX_MS, signal,
    });
  }

  /** A file's bytes. */
  read(path: string, signal?: AbortSignal): Promise<Uint8Array> {
    return this.#wire.bytes({
      method: "GET", route: ROUTES.files, params: { id: this.runId }, query: { path }, accept: "application/octet-stream",
      action: `read ${path} in session ${this.runId}`, timeoutMs: SANDBOX_MS, signal,
    });
  }

  /** A file's text (UTF-8). */
  async readText(path: string, signal?: AbortSignal): Promise<string> {
    return new TextDecoder().decode(await this.read(path, signal));
  }

  /** A folder as a tar of its regular files and folders (links and special files left out). */
  readTar(path: string, signal?: AbortSignal): Promise<Uint8Array> {
    return this.#wire.bytes({
      method: "GET", route: ROUTES.files, params: { id: this.runId }, query: { path }, accept: "application/x-tar",
      action: `read ${path} as a tar in session ${this.runId}`, timeoutMs: SANDBOX_MS, signal,
    });
  }

  /** A folder's entries in name order (links listed as links, never followed). */
  async list(path = "/workspace", signal?: AbortSignal): Promise<FileEntry[]> {
    const listing = await this.#wire.json<FileListing>({
      method: "GET", route: ROUTES.files, params: { id: this.runId }, query: { path },
      action: `list ${path} in session ${this.runId}`, timeoutMs: SANDBOX_MS, signal,
    });
    return listing.entries;
  }

  /** Closes the session: running steps end, outputs are collected, credentials revoked, the sandbox removed. */
  async close(signal?: AbortSignal): Promise<Run> {
    this.#result = await this.#wire.json<Run>({
      method: "DELETE", route: ROUTES.runById, params: { id: this.runId }, action: `close session ${this.runId}`,
      timeoutMs: SANDBOX_MS, signal,
    });
    return this.#result;
  }

  /**
   * `await using`: closes the session unless it was closed. One that had already ended by itself
   * (idle, deadline) answers `run_ended`; its result is then read instead.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#result !== undefined) return;
    try {
      await this.close();
    } catch (failure) {
      if (!(failure instanceof ApiError && failure.code === "run_ended")) throw failure;
      this.#result = await this.#wire.json<Run>({ method: "GET", route: ROUTES.runById, params: { id: this.runId }, action: `read session ${this.runId}`, timeoutMs: SHORT_MS });
    }
  }
}

function stepRequest(command: readonly string[], options: StepOptions, background: boolean): ExecRequest {
  return {
    command: checkCommand(command),
    ...(options.env === undefined ? {} : { env: { ...options.env } }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
    ...(options.timeoutSeconds === undefined ? {} : { timeout_seconds: options.timeoutSeconds }),
    ...(background ? { background: true } : {}),
  };
}
