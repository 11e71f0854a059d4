package dev.agentsandbox.store;

import java.util.Objects;

/** A newly created token with its secret, which is shown once and never stored. */
public record IssuedToken(String name, String secret) {

  public IssuedToken {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(secret, "secret");
  }

  /** Names the token but never prints the secret. */
  @Override
  public String toString() {
    return "IssuedToken[name=" + name + ", secret=***]";
  }
}
