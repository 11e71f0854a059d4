package dev.agentsandbox.server.http;

import java.io.IOException;

/** Handles one routed request. */
@FunctionalInterface
public interface Handler {
  Response handle(Request request) throws IOException;
}
