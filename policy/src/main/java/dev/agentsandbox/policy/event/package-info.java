/**
 * What a run records, as one type per kind of event: each {@link RunEvent} owns its audit row type
 * ({@link EventType}) and its data fields, written by {@link RunEvent#toTree()} and read by {@link
 * RunEvent#read}; and the proxy's {@link DecisionRecord}, the one wire form of an egress decision
 * between the proxy and the control plane. Pure: plain Java values in and out (maps, lists,
 * strings, numbers, booleans), no I/O, no JSON library; the callers parse and print the JSON.
 *
 * <p>The audit row names and fields are a contract (docs/api.md "Audit rows of a run",
 * docs/runs.md): rows written by earlier versions must keep verifying and reading, so a reader
 * accepts the fields an older writer left out where one did, and ignores fields it does not know (a
 * newer writer's, and the {@code labels} the store adds to every row of a labelled run).
 */
package dev.agentsandbox.policy.event;
