package dev.agentsandbox.credentials;

import java.time.Instant;
import java.util.Objects;

/**
 * A credential minted for one run. {@link #toString()} never shows the value.
 *
 * @param name the credential's name in the agent's configuration (its file name in the sandbox)
 * @param source where it came from: {@code run-token}, {@code jwt} or {@code command}
 * @param value the secret itself
 * @param expiresAt when it stops working, never after the run's deadline
 */
public record IssuedCredential(String name, String source, String value, Instant expiresAt) {
  public IssuedCredential {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(value, "value");
    Objects.requireNonNull(expiresAt, "expiresAt");
  }

  @Override
  public String toString() {
    return "IssuedCredential[name="
        + name
        + ", source="
        + source
        + ", expiresAt="
        + expiresAt
        + ", value=("
        + value.length()
        + " characters, not shown)]";
  }
}
