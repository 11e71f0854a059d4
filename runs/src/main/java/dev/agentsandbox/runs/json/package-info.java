/**
 * How the admin API's JSON is read and written ({@link dev.agentsandbox.runs.json.Json}: strict
 * parsing, exact decimals), here below both the server that serves the API and the command line
 * that reads its documents back, so that both read a document the same way. Depends on nothing of
 * {@code dev.agentsandbox.runs}.
 */
package dev.agentsandbox.runs.json;
