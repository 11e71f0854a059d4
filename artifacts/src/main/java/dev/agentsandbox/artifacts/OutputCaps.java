package dev.agentsandbox.artifacts;

/**
 * How much of a run's outputs is kept, from the agent's configuration.
 *
 * @param maxBytes the most bytes kept in all
 * @param maxFiles the most files kept
 */
public record OutputCaps(long maxBytes, int maxFiles) {
  public OutputCaps {
    if (maxBytes < 0 || maxFiles < 0) {
      throw new IllegalArgumentException("output caps must not be negative");
    }
  }
}
