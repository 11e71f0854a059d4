/**
 * A deepagents sandbox backend (its `SandboxBackendProtocolV2`, through its `BaseSandbox`) on an
 * Agent Sandbox session: the agent's `execute` tool runs each command as a step of the session,
 * and its file tools read and write the session's /workspace. docs/clients.md says why this
 * interface.
 *
 *     await using session = await client.openSession("helper");
 *     const agent = createDeepAgent({ model, backend: new AgentSandboxBackend(session) });
 */

import {
  BaseSandbox,
  type ExecuteResponse,
  type FileDownloadResponse,
  type FileOperationError,
  type FileUploadResponse,
} from "deepagents";
import { ApiError } from "./errors.js";
import type { Session } from "./session.js";
import { refused, type Step } from "./types.js";

export interface AgentSandboxBackendOptions {
  /** Each command's time-out (the API's default is 300 s; never past the session's deadline). */
  readonly timeoutSeconds?: number;
  /** The folder commands start in, inside /workspace (default /workspace). */
  readonly cwd?: string;
}

/**
 * deepagents' sandbox backend over one session. Commands run as `sh -c COMMAND` steps; `output` is
 * the step's stdout, then its stderr, then one line per egress refusal naming the host, port and
 * the proxy's reason, so that the model learns why a host was refused instead of retrying blindly.
 * The session's lifetime is the caller's: close it (or hold it with `await using`) when done.
 */
export class AgentSandboxBackend extends BaseSandbox {
  readonly session: Session;
  readonly #options: AgentSandboxBackendOptions;

  constructor(session: Session, options: AgentSandboxBackendOptions = {}) {
    super();
    this.session = session;
    this.#options = options;
  }

  /** The session's run id: its record, timeline and audit rows name it. */
  get id(): string {
    return this.session.runId;
  }

  async execute(command: string): Promise<ExecuteResponse> {
    const step = await this.session.exec(["sh", "-c", command], {
      ...(this.#options.cwd === undefined ? {} : { cwd: this.#options.cwd }),
      ...(this.#options.timeoutSeconds === undefined ? {} : { timeoutSeconds: this.#options.timeoutSeconds }),
    });
    return { output: describe(step), exitCode: step.exit_status, truncated: step.output_truncated === true };
  }

  async uploadFiles(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    const answers: FileUploadResponse[] = [];
    for (const [path, content] of files) {
      try {
        await this.session.write(path, content);
        answers.push({ path, error: null });
      } catch (failure) {
        answers.push({ path, error: fileError(failure) });
      }
    }
    return answers;
  }

  async downloadFiles(paths: string[]): Promise<FileDownloadResponse[]> {
    const answers: FileDownloadResponse[] = [];
    for (const path of paths) {
      try {
        answers.push({ path, content: await this.session.read(path), error: null });
      } catch (failure) {
        answers.push({ path, content: null, error: fileError(failure) });
      }
    }
    return answers;
  }
}

/** What the model reads of a step: its output, how it ended when not by its own exit, its refusals. */
function describe(step: Step): string {
  const parts = [step.stdout ?? "", step.stderr ?? ""].filter((text) => text.length > 0);
  if (step.end !== "exit") parts.push(`[agent-sandbox] the command ended ${step.end ?? "without an end"}${step.detail === undefined ? "" : `: ${step.detail}`}\n`);
  for (const decision of refused(step)) {
    const where = decision.port === undefined ? decision.host : `${decision.host}:${decision.port}`;
    parts.push(`[agent-sandbox] egress to ${where} refused by the sandbox's proxy: ${decision.reason} (only the agent's allow-list is reachable)\n`);
  }
  let output = "";
  for (const part of parts) output += (output.length > 0 && !output.endsWith("\n") ? "\n" : "") + part;
  return output;
}

/**
 * deepagents' closed set of file errors for the API's file codes (docs/api.md, Files). Anything
 * else (the session ended, the server is unreachable, a file over the size cap) is no answer about
 * that path, and is thrown for the tool call to fail with the API's code.
 */
function fileError(failure: unknown): FileOperationError {
  if (!(failure instanceof ApiError)) throw failure;
  switch (failure.code) {
    case "file_not_found":
      return "file_not_found";
    case "invalid_path":
      return "invalid_path";
    case "not_acceptable":
      return "is_directory";
    case "path_refused":
      if (failure.body.reason === "wrong-kind") return "is_directory";
      if (failure.body.reason === "permission") return "permission_denied";
      return "invalid_path";
    default:
      throw failure;
  }
}
