package dev.agentsandbox.runs;

/** No run has the given id. */
public class RunNotFoundException extends RunException {
  private static final long serialVersionUID = 1L;

  public RunNotFoundException(String runId) {
    super("finding run " + RunIds.shown(runId) + ": no such run");
  }
}
