/**
 * A run's audit trail in the vocabulary of {@code policy.event}: {@link RunTrail} is the one writer
 * of a run's rows, {@link RecordedEvent} the one reader (of store rows and of the API's rows
 * alike), {@link RunTimeline} the answer to "who launched it, what ran, what was allowed and
 * denied, how it ended" built from those events, and {@link ChainCheck} the chain statement a
 * timeline carries.
 */
package dev.agentsandbox.runs.audit;
