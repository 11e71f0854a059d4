package dev.agentsandbox.runs;

/**
 * Why a run was refused before anything was created. Each has a stable code for the API's {@code
 * error} field and the {@code agent_sandbox.refused} audit row.
 */
public enum Refusal {
  /** The request itself is malformed (no command, over-long arguments, ...). */
  INVALID_REQUEST("invalid_request"),
  /** Agent sandboxes are turned off. */
  SANDBOXES_DISABLED("sandboxes_disabled"),
  /** The agent has no sandbox configuration. */
  AGENT_NOT_LISTED("agent_not_listed"),
  /** An environment variable would undo or steer around the fence. */
  ENV_REFUSED("env_refused"),
  /** The configured backend is missing here, or none is usable (never replaced by a weaker one). */
  BACKEND_UNAVAILABLE("backend_unavailable"),
  /** The control plane already runs as many runs as it is allowed to at once. */
  TOO_MANY_RUNS("too_many_runs"),
  /** {@code require_runtime_class} is set and no backend here offers gVisor or stronger. */
  RUNTIME_CLASS_REQUIRED("runtime_class_required"),
  /**
   * The agent's credentials cannot be minted on this control plane (no JWT signing keys, a
   * credential command the operator did not register).
   */
  CREDENTIALS_UNAVAILABLE("credentials_unavailable"),
  /** Minting a credential failed or its answer was refused (an expiry after the deadline, ...). */
  CREDENTIAL_REFUSED("credential_refused");

  private final String code;

  Refusal(String code) {
    this.code = code;
  }

  /** The stable wire code. */
  public String code() {
    return code;
  }
}
