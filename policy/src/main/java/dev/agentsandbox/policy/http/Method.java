package dev.agentsandbox.policy.http;

import java.util.Optional;

/**
 * The request methods an inspected host's rules may name: a closed set, so that {@code *} means
 * exactly these seven and rule coverage can be decided method by method. A request with any other
 * method ({@code TRACE}, {@code PROPFIND}, {@code CONNECT} inside a tunnel) matches no rule and is
 * refused wherever rules apply.
 */
public enum Method {
  GET,
  HEAD,
  POST,
  PUT,
  PATCH,
  DELETE,
  OPTIONS;

  /** The method of a request line's method token, if it is one of these (case-sensitive). */
  public static Optional<Method> of(String token) {
    for (Method method : values()) {
      if (method.name().equals(token)) {
        return Optional.of(method);
      }
    }
    return Optional.empty();
  }
}
