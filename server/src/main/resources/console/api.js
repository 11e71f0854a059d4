// The API client: the token lives in sessionStorage (gone when the tab closes), travels only as
// a bearer header to this origin, and is never put in a URL or a cookie.
import { h } from "./dom.js";

const KEY = "agent-sandbox.token";
export const BASE = "/api/admin/platform/agent-sandbox";
export const EGRESS = "/api/admin/platform/egress-policy";
export const AUDIT = "/api/admin/platform/audit";
export const TOKEN = "/api/admin/platform/token";

/**
 * The alphabet of run ids (the server's RunSpec: 1 to 32 lowercase letters and digits). An id from
 * the page's address is checked against it before any request is built from it: a fragment such
 * as #/runs/x%2F..%2FVICTIM names no run, it does not reach VICTIM.
 */
export const RUN_ID = /^[a-z0-9]{1,32}$/;

/** Whether {@code id} can be a run's id. */
export function isRunId(id) {
  return typeof id === "string" && RUN_ID.test(id);
}

/**
 * The API path of a run, or of something under it: every segment percent-encoded, so none can add
 * a "/" or a ".." of its own, and the id checked against {@link RUN_ID} first.
 */
export function runPath(runId, ...rest) {
  if (!isRunId(runId)) throw new Error("not a run id: " + JSON.stringify(String(runId)));
  return BASE + "/runs/" + [runId, ...rest].map(encodeURIComponent).join("/");
}

/** The console's own address of a run's page. */
export function runHref(runId) {
  return "#/runs/" + encodeURIComponent(runId);
}

export const session = {
  token: () => sessionStorage.getItem(KEY),
  signIn: (token) => sessionStorage.setItem(KEY, token),
  signOut: () => sessionStorage.removeItem(KEY),
};

/** A refusal or failure the API answered, with its JSON body. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body.message || "HTTP " + status);
    this.status = status;
    this.code = body.error || "http_" + status;
    this.body = body;
  }

  /** The scope the token lacks, when that is why the API refused. */
  get missingScope() {
    return this.body.missing_scope || null;
  }
}

/**
 * Calls the API. Options: body (sent as JSON), headers, accept, signal, stream (answers the
 * Response itself so the caller can read its body as it arrives).
 */
export async function api(method, path, options = {}) {
  const token = session.token();
  const headers = { Accept: options.accept || "application/json", ...(options.headers || {}) };
  if (token) headers.Authorization = "Bearer " + token;
  const init = { method, headers, cache: "no-store", credentials: "omit", redirect: "error" };
  if (options.signal) init.signal = options.signal;
  if (options.body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, {
      error: "unreachable",
      message: method + " " + path + ": the control plane did not answer (is serve running?)",
    });
  }
  if (!response.ok) {
    let body;
    try {
      body = await response.json();
    } catch (e) {
      body = { error: "http_" + response.status, message: method + " " + path + ": HTTP " + response.status };
    }
    if (response.status === 401) window.dispatchEvent(new CustomEvent("asb-signed-out", { detail: body }));
    throw new ApiError(response.status, body);
  }
  if (options.stream) return response;
  const type = response.headers.get("Content-Type") || "";
  return type.startsWith("application/json") ? response.json() : response.text();
}

/** What to show for a failed call: the missing scope first, then the API's own message. */
export function problem(error) {
  if (!(error instanceof ApiError)) {
    return h("div", { class: "alert alert-error", role: "alert" }, String(error.message || error));
  }
  const parts = [];
  if (error.missingScope) {
    parts.push(
      h("p", { class: "refusal" }, "Refused: this token lacks the scope ", h("code", {}, error.missingScope), "."),
    );
  }
  parts.push(h("p", {}, error.message));
  const problems = error.body.problems || [];
  if (problems.length > 0) {
    parts.push(
      h(
        "ul",
        {},
        problems.map((p) =>
          typeof p === "string" ? h("li", {}, p) : h("li", {}, h("code", {}, p.path || ""), " ", p.message || ""),
        ),
      ),
    );
  }
  return h("div", { class: "alert alert-error", role: "alert", "data-error": error.code }, parts);
}

/** Splits a command line into arguments: spaces separate, single or double quotes group. */
export function splitCommand(text) {
  const args = [];
  let current = null;
  let quote = null;
  for (const ch of text) {
    if (quote) {
      if (ch === quote) quote = null;
      else current += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      if (current === null) current = "";
    } else if (/\s/.test(ch)) {
      if (current !== null) args.push(current);
      current = null;
    } else {
      current = (current || "") + ch;
    }
  }
  if (quote) throw new Error("the command has an unclosed " + quote + " quote");
  if (current !== null) args.push(current);
  return args;
}
