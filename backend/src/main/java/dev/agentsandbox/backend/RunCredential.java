package dev.agentsandbox.backend;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * A credential minted for one run, as a backend delivers it: a file {@code name} under {@link
 * RunContract#CREDENTIALS_DIR} (mode 0400, owned by the workload's user, on a tmpfs) and, when
 * {@code env} is set, also that environment variable. {@link #toString()} never shows the value;
 * backends never put it in a plan, a label, a log line or an error.
 *
 * @param name the file name
 * @param value the secret
 * @param env the environment variable to deliver it in too, if any
 * @param expiresAt when it stops working (no later than the run's deadline)
 */
public record RunCredential(String name, String value, Optional<String> env, Instant expiresAt) {
  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_.-]{0,62}");

  public RunCredential {
    Objects.requireNonNull(name, "name");
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("credential name is not a plain file name: " + name);
    }
    Objects.requireNonNull(value, "value");
    Objects.requireNonNull(env, "env");
    Objects.requireNonNull(expiresAt, "expiresAt");
  }

  @Override
  public String toString() {
    return "RunCredential[name="
        + name
        + ", env="
        + env.orElse("-")
        + ", expiresAt="
        + expiresAt
        + ", value=(not shown)]";
  }
}
