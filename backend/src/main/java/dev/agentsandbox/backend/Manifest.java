package dev.agentsandbox.backend;

import java.util.Objects;

/**
 * One object a run would create, exactly as the backend will submit it.
 *
 * @param kind what it is, in the backend's own terms ({@code Namespace}, {@code NetworkPolicy},
 *     {@code network}, {@code container}, ...)
 * @param name its name
 * @param body the object itself, as a tree of maps, lists and scalars (or a model object) that
 *     Jackson serializes to JSON or YAML without loss
 */
public record Manifest(String kind, String name, Object body) {
  public Manifest {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(body, "body");
  }
}
