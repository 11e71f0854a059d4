package dev.agentsandbox.server.governance;

import java.time.Instant;

/**
 * A document with the version it was stored as.
 *
 * @param document the model
 * @param version the stored version; 0 when nothing was ever saved and the defaults apply
 * @param updatedAt when it was saved, or null for the defaults
 * @param updatedBy the token name that saved it, or null for the defaults
 * @param <T> the model type
 */
public record Versioned<T>(T document, long version, Instant updatedAt, String updatedBy) {}
