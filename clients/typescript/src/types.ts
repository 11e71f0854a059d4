/** The API's types as the client hands them out, each one a schema of the OpenAPI document. */

import type { components } from "./generated/openapi.js";

type Schemas = components["schemas"];

/** A run's (or a session's) state and, once ended, its result (`GET .../runs/{id}`). */
export type Run = Schemas["Run"];
export type RunSummary = Schemas["RunSummary"];
export type RunStatus = Schemas["RunStatus"];
/** One decision of the sandbox's egress proxy: `decision` allow or deny, with its `reason`. */
export type EgressDecision = Schemas["EgressDecision"];
/** A session's step: running, or its result (exit status, stdout and stderr tails, egress). */
export type Step = Schemas["Step"];
export type FileWritten = Schemas["FileWritten"];
export type FileListing = Schemas["FileListing"];
export type FileEntry = FileListing["entries"][number];
/** Who the token is: its name, scopes and the agents it is limited to (null: every agent). */
export type TokenSelf = Schemas["TokenSelf"];
export type RunRequest = Schemas["RunRequest"];
export type SessionRequest = Schemas["SessionRequest"];
export type ExecRequest = Schemas["ExecRequest"];

/** A line of a run's streamed output (`GET .../runs/{id}/output`, NDJSON). */
export type OutputEvent =
  | { readonly type: "stdout"; readonly text: string }
  | { readonly type: "stderr"; readonly text: string }
  | { readonly type: "skipped"; readonly lines: number };

/** A streamed step's events, in order: `started`, output lines and egress decisions as they come, then `result`. */
export type StepEvent =
  | { readonly type: "started"; readonly step: number }
  | OutputEvent
  | { readonly type: "egress"; readonly decision: EgressDecision }
  | { readonly type: "result"; readonly result: Step };

/** The connections the proxy refused, each with its host, port and reason (`not-allowed`, ...). */
export function refused(result: { readonly egress?: readonly EgressDecision[] | undefined }): EgressDecision[] {
  return (result.egress ?? []).filter((decision) => decision.decision === "deny");
}

/** The event of one NDJSON output line (`{"stdout": ...}`, `{"stderr": ...}`, `{"skipped_lines": N}`), or undefined for another line. */
export function outputEvent(line: Record<string, unknown>): OutputEvent | undefined {
  if (typeof line.stdout === "string") return { type: "stdout", text: line.stdout };
  if (typeof line.stderr === "string") return { type: "stderr", text: line.stderr };
  if (typeof line.skipped_lines === "number") return { type: "skipped", lines: line.skipped_lines };
  return undefined;
}
