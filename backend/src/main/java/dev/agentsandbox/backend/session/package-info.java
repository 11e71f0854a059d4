/**
 * Sessions: sandboxes whose commands come later, one step at a time, with files put in and taken
 * out between them (docs/api.md, "Sessions"). The types here are what every backend implements for
 * them ({@link dev.agentsandbox.backend.session.SessionSandbox}) and the values that cross that
 * boundary; the run service owns the session's lifecycle, its idle and hard deadlines, its audit
 * rows and its redaction.
 */
package dev.agentsandbox.backend.session;
