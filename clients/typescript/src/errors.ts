/** The API's errors (docs/api.md, Errors) as one exception class. */

/**
 * The API refused or failed a request: its HTTP `status`, its stable `code` (`run_not_found`,
 * `agent_not_listed`, ...) and its message; `body` is the whole error answer (`problems`,
 * `reason`, `run_id`, ...).
 *
 * Where the server gave no answer, `status` is 0 and `code` says why: `unreachable` (no
 * connection), `timeout` (no answer in time), `stream_cut` (a streamed answer ended before its
 * result). Never carries the token.
 */
export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly status: number;
  readonly code: string;
  readonly body: Readonly<Record<string, unknown>>;

  constructor(
    status: number,
    code: string,
    message: string,
    body: Record<string, unknown> = {},
    options?: ErrorOptions,
  ) {
    super(`${code}: ${message}`, options);
    this.status = status;
    this.code = code;
    this.body = body;
  }

  /** The error as the API answered it, or an `http_<status>` one for an answer that was not the API's. */
  static async fromResponse(response: Response, action: string): Promise<ApiError> {
    const raw = await response.text().catch(() => "");
    let answer: unknown;
    try {
      answer = JSON.parse(raw);
    } catch {
      answer = undefined;
    }
    if (isRecord(answer) && typeof answer.error === "string") {
      const message = typeof answer.message === "string" ? answer.message : action;
      return new ApiError(response.status, answer.error, message, answer);
    }
    return new ApiError(
      response.status,
      `http_${response.status}`,
      `${action}: HTTP ${response.status} ${JSON.stringify(raw.slice(0, 120))} (not an answer of the API: is the URL the server's?)`,
    );
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
