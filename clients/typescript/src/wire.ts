/** The HTTP exchange under the client: bearer token, time bounds, errors as ApiError, NDJSON lines. */

import { ApiError, isRecord } from "./errors.js";
import type { paths } from "./generated/openapi.js";

/** Every route the client calls, checked against the OpenAPI document's paths by the compiler. */
export const ROUTES = {
  token: "/api/admin/platform/token",
  run: "/api/admin/platform/agent-sandbox/run",
  runs: "/api/admin/platform/agent-sandbox/runs",
  sessions: "/api/admin/platform/agent-sandbox/sessions",
  runById: "/api/admin/platform/agent-sandbox/runs/{id}",
  output: "/api/admin/platform/agent-sandbox/runs/{id}/output",
  exec: "/api/admin/platform/agent-sandbox/runs/{id}/exec",
  steps: "/api/admin/platform/agent-sandbox/runs/{id}/steps",
  step: "/api/admin/platform/agent-sandbox/runs/{id}/steps/{n}",
  files: "/api/admin/platform/agent-sandbox/runs/{id}/files",
} as const satisfies Record<string, keyof paths>;

export type Route = (typeof ROUTES)[keyof typeof ROUTES];

// A run id as the API makes them (20 lower-case letters and digits); checked before it goes into a
// path, so that a caller's string can never name another route ("../token").
const RUN_ID = /^[a-z0-9]{1,32}$/;

/** How long a call may wait for its answer: `null` lets the server's own deadline decide. */
export const SHORT_MS = 60_000;
export const SANDBOX_MS = 300_000;

export interface Exchange {
  readonly method: "GET" | "POST" | "PUT" | "DELETE";
  readonly route: Route;
  readonly params?: { readonly id?: string; readonly n?: number };
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly json?: unknown;
  readonly body?: Uint8Array;
  readonly contentType?: string;
  readonly accept: string;
  /** What the caller tried, for messages: "run a step", "read app.py". */
  readonly action: string;
  readonly timeoutMs: number | null;
  readonly signal?: AbortSignal | undefined;
}

/** One server and one token. The token is sent to `url` only: redirects are refused, never followed. */
export class Wire {
  readonly url: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;

  constructor(url: string, token: string, fetchImpl: typeof fetch) {
    this.url = url.replace(/\/+$/, "");
    this.#token = token;
    this.#fetch = fetchImpl;
  }

  async send(exchange: Exchange): Promise<Response> {
    const target = this.url + expand(exchange) + queryString(exchange.query);
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.#token}`,
      Accept: exchange.accept,
    };
    let body: string | Uint8Array | undefined;
    if (exchange.json !== undefined) {
      body = JSON.stringify(exchange.json);
      headers["Content-Type"] = "application/json";
    } else if (exchange.body !== undefined) {
      body = exchange.body;
      headers["Content-Type"] = exchange.contentType ?? "application/octet-stream";
    }
    const signals = [exchange.signal, exchange.timeoutMs === null ? undefined : AbortSignal.timeout(exchange.timeoutMs)];
    const present = signals.filter((s): s is AbortSignal => s !== undefined);
    let response: Response;
    try {
      response = await this.#fetch(target, {
        method: exchange.method,
        headers,
        ...(body === undefined ? {} : { body }),
        redirect: "error",
        ...(present.length === 0 ? {} : { signal: AbortSignal.any(present) }),
      });
    } catch (cause) {
      throw failedToAnswer(exchange, this.url, cause);
    }
    if (!response.ok) throw await ApiError.fromResponse(response, `${exchange.action} on ${this.url}`);
    return response;
  }

  async json<T>(exchange: Omit<Exchange, "accept">): Promise<T> {
    const response = await this.send({ ...exchange, accept: "application/json" });
    const raw = await readAll(response, exchange, this.url);
    return (raw.length === 0 ? {} : JSON.parse(new TextDecoder().decode(raw))) as T;
  }

  async bytes(exchange: Exchange): Promise<Uint8Array> {
    return readAll(await this.send(exchange), exchange, this.url);
  }

  /** Each JSON object of an `application/x-ndjson` answer, as it arrives; cancelled when the caller stops early. */
  async *lines(exchange: Omit<Exchange, "accept">): AsyncGenerator<Record<string, unknown>, void, undefined> {
    const response = await this.send({ ...exchange, accept: "application/x-ndjson" });
    if (response.body === null) return;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let pending = "";
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (cause) {
          throw failedToAnswer(exchange, this.url, cause);
        }
        if (chunk.done) break;
        pending += chunk.value;
        let newline: number;
        while ((newline = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, newline).trim();
          pending = pending.slice(newline + 1);
          if (line.length > 0) yield parseLine(line, exchange);
        }
      }
      if (pending.trim().length > 0) yield parseLine(pending.trim(), exchange);
    } finally {
      // Stopping early (a break out of for await) closes the connection; on the server the step goes on.
      await reader.cancel().catch(() => undefined);
    }
  }
}

export function checkRunId(runId: string): string {
  if (typeof runId !== "string" || !RUN_ID.test(runId)) {
    throw new TypeError(`name a run: ${JSON.stringify(String(runId).slice(0, 60))} is not a run id (20 lower-case letters and digits)`);
  }
  return runId;
}

export function checkCommand(command: readonly string[]): string[] {
  if (!Array.isArray(command) || command.length === 0 || command.some((a) => typeof a !== "string")) {
    throw new TypeError('command is a non-empty array of strings, run without a shell: ["sh", "-c", "..."] for one');
  }
  return [...command];
}

function expand(exchange: Exchange): string {
  return exchange.route.replace(/\{(id|n)\}/g, (_, name: "id" | "n") => {
    const value = exchange.params?.[name];
    if (value === undefined) throw new TypeError(`${exchange.action}: the route ${exchange.route} needs {${name}}`);
    return name === "id" ? checkRunId(String(value)) : String(Math.trunc(Number(value)));
  });
}

function queryString(query: Exchange["query"]): string {
  if (query === undefined) return "";
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text.length === 0 ? "" : `?${text}`;
}

async function readAll(response: Response, exchange: Pick<Exchange, "action" | "timeoutMs">, url: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(await response.arrayBuffer());
  } catch (cause) {
    throw failedToAnswer(exchange, url, cause);
  }
}

function parseLine(line: string, exchange: Pick<Exchange, "action">): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    value = undefined;
  }
  if (!isRecord(value)) {
    throw new ApiError(0, "stream_cut", `${exchange.action}: a streamed line is not a JSON object: ${JSON.stringify(line.slice(0, 120))}`);
  }
  return value;
}

function failedToAnswer(exchange: Pick<Exchange, "action" | "timeoutMs">, url: string, cause: unknown): ApiError {
  const name = cause instanceof Error ? cause.name : "";
  if (name === "TimeoutError") {
    return new ApiError(0, "timeout", `${exchange.action} on ${url}: no answer within ${exchange.timeoutMs} ms (the server may still be working on it)`, {}, { cause });
  }
  if (name === "AbortError") {
    return new ApiError(0, "aborted", `${exchange.action} on ${url}: the caller's signal aborted it`, {}, { cause });
  }
  const detail = cause instanceof Error ? (cause.cause instanceof Error ? cause.cause.message : cause.message) : String(cause);
  return new ApiError(0, "unreachable", `${exchange.action} on ${url}: no answer (${detail.slice(0, 200)}; is serve running there?)`, {}, { cause });
}
