/**
 * The values of sessions as the run service offers them to the API (docs/api.md, "Sessions"): what
 * a client asks ({@link dev.agentsandbox.runs.session.SessionRequest}, {@link
 * dev.agentsandbox.runs.session.ExecRequest}), what it is answered ({@link
 * dev.agentsandbox.runs.session.StepView}, {@link dev.agentsandbox.runs.session.FileWritten},
 * {@link dev.agentsandbox.runs.session.FileRead}) and why it is refused ({@link
 * dev.agentsandbox.runs.session.SessionRefusedException} with its closed {@link
 * dev.agentsandbox.runs.session.SessionError}). The machinery that runs sessions is in {@code
 * dev.agentsandbox.runs}; this package depends on nothing of it.
 */
package dev.agentsandbox.runs.session;
