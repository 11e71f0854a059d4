package dev.agentsandbox.mcp;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.server.McpStatelessServerHandler;
import io.modelcontextprotocol.server.McpStatelessSyncServer;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpStatelessServerTransport;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * {@code serve}'s {@code /mcp}: the MCP streamable HTTP transport in its stateless form (each
 * {@code POST} carries one JSON-RPC message and is answered with one JSON body; no session id, no
 * server-sent stream, so {@code GET} is 405 as the transport allows). Every request presents a
 * bearer token, which is checked first ({@code GET /api/admin/platform/token}) and then used for
 * every API request its tools make, against this control plane's own address: the token's scopes
 * and agents apply exactly as they do to the API. The tools and their descriptions (the token's
 * agents' allow-lists) are built per request from what that token may read.
 */
public final class McpHttpHandler implements HttpHandler {
  /** The path served. */
  public static final String PATH = "/mcp";

  /** The largest JSON-RPC message accepted (the tools' own bodies are far smaller). */
  static final int MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

  private static final Logger LOG = LoggerFactory.getLogger(McpHttpHandler.class);
  private static final String BEARER = "bearer ";

  private final URI controlPlane;
  private final OriginCheck origins;
  private final HttpClient http;
  private final ObjectMapper json = new ObjectMapper();

  /**
   * @param controlPlane where the API this handler calls listens ({@code http://127.0.0.1:PORT})
   * @param origins the {@code Origin} headers served ({@link OriginCheck#listeningOn})
   */
  public McpHttpHandler(URI controlPlane, OriginCheck origins) {
    this.controlPlane = controlPlane;
    this.origins = origins;
    this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  }

  @Override
  public void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getRawPath();
      if (!path.equals(PATH) && !path.equals(PATH + "/")) {
        answer(
            exchange,
            404,
            error("route_not_found", "find " + Texts.bounded(path) + ": no such route"));
        return;
      }
      // Before anything else, the token included: a page's browser may hold no token, but it must
      // not even learn how this server answers one (MCP streamable HTTP, Security Warning).
      OriginCheck.Decision origin = origins.decide(exchange.getRequestHeaders().get("Origin"));
      if (!origin.reason().accepted()) {
        LOG.warn("refused an MCP request with Origin {} ({})", origin.origin(), origin.reason());
        answer(
            exchange,
            403,
            error(
                "origin_refused",
                "serve "
                    + PATH
                    + " to a request from origin '"
                    + origin.origin()
                    + "': "
                    + origin.reason().name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ')
                    + ", not this server's own (a browser page of another origin may not call"
                    + " the tools, against DNS rebinding; MCP clients that are not browsers send"
                    + " no Origin)"));
        return;
      }
      if (!exchange.getRequestMethod().equals("POST")) {
        exchange.getResponseHeaders().set("Allow", "POST");
        answer(
            exchange,
            405,
            error(
                "method_not_allowed",
                exchange.getRequestMethod()
                    + " "
                    + PATH
                    + ": this server is stateless and offers no event stream (POST one JSON-RPC"
                    + " message per request)"));
        return;
      }
      String secret = bearer(exchange.getRequestHeaders().getFirst("Authorization"));
      if (secret == null) {
        exchange.getResponseHeaders().set("WWW-Authenticate", "Bearer");
        answer(
            exchange,
            401,
            error(
                "missing_token",
                "authenticate: no bearer token (send Authorization: Bearer TOKEN, a token from"
                    + " agent-sandbox token create)"));
        return;
      }
      SandboxApi api = new SandboxApi(controlPlane, secret, http, json);
      try {
        api.self();
      } catch (SandboxApiException e) {
        if (e.status() == 401) {
          exchange.getResponseHeaders().set("WWW-Authenticate", "Bearer");
        }
        answer(
            exchange,
            e.status() > 0 ? e.status() : 502,
            e.body() instanceof ObjectNode said ? said : error(e.code(), e.getMessage()));
        return;
      }
      byte[] body = read(exchange.getRequestBody());
      if (body == null) {
        answer(
            exchange,
            413,
            error(
                "body_too_large",
                "read the MCP message: it is over " + MAX_MESSAGE_BYTES + " bytes"));
        return;
      }
      McpSchema.JSONRPCMessage message;
      try {
        message =
            McpSchema.deserializeJsonRpcMessage(
                McpServers.mapper(json), new String(body, java.nio.charset.StandardCharsets.UTF_8));
      } catch (IOException | IllegalArgumentException e) {
        answer(
            exchange, 400, rpcError(-32700, "parse error: the body is not one JSON-RPC message"));
        return;
      }
      try {
        serve(exchange, api, message);
      } catch (RuntimeException e) {
        // The SDK answers a tool's failure as a JSON-RPC error itself; this is the server failing
        // around it, said as the API says an internal error, without its stack trace.
        LOG.warn("MCP request failed: {}", e.toString());
        answer(exchange, 500, rpcError(-32603, "internal error: " + e.getClass().getSimpleName()));
      }
    }
  }

  private void serve(HttpExchange exchange, SandboxApi api, McpSchema.JSONRPCMessage message)
      throws IOException {
    OneRequest transport = new OneRequest();
    McpStatelessSyncServer server = McpServers.statelessFor(api, json, transport);
    try {
      switch (message) {
        case McpSchema.JSONRPCRequest request -> {
          McpSchema.JSONRPCResponse response =
              transport.handler.handleRequest(McpTransportContext.EMPTY, request).block();
          byte[] out = McpServers.mapper(json).writeValueAsBytes(response);
          exchange.getResponseHeaders().set("Content-Type", "application/json");
          exchange.sendResponseHeaders(200, out.length);
          try (OutputStream stream = exchange.getResponseBody()) {
            stream.write(out);
          }
        }
        case McpSchema.JSONRPCNotification notification -> {
          transport.handler.handleNotification(McpTransportContext.EMPTY, notification).block();
          exchange.sendResponseHeaders(202, -1);
        }
        default -> exchange.sendResponseHeaders(202, -1);
      }
    } finally {
      server.close();
    }
  }

  /** The transport of one request: it only hands the server's handler to {@link #serve}. */
  private static final class OneRequest implements McpStatelessServerTransport {
    private McpStatelessServerHandler handler;

    @Override
    public void setMcpHandler(McpStatelessServerHandler handler) {
      this.handler = handler;
    }

    @Override
    public Mono<Void> closeGracefully() {
      return Mono.empty();
    }
  }

  private static String bearer(String header) {
    if (header == null) {
      return null;
    }
    String trimmed = header.trim();
    if (trimmed.length() <= BEARER.length()
        || !trimmed.substring(0, BEARER.length()).toLowerCase(Locale.ROOT).equals(BEARER)) {
      return null;
    }
    String secret = trimmed.substring(BEARER.length()).trim();
    return secret.isEmpty() ? null : secret;
  }

  /** The body, or null when it is over {@link #MAX_MESSAGE_BYTES}. */
  private static byte[] read(InputStream in) throws IOException {
    byte[] bytes = in.readNBytes(MAX_MESSAGE_BYTES + 1);
    return bytes.length > MAX_MESSAGE_BYTES ? null : bytes;
  }

  private ObjectNode error(String code, String message) {
    ObjectNode out = json.createObjectNode();
    out.put("error", code);
    out.put("message", message);
    return out;
  }

  private ObjectNode rpcError(int code, String message) {
    ObjectNode out = json.createObjectNode();
    out.put("jsonrpc", "2.0");
    out.putNull("id");
    ObjectNode error = out.putObject("error");
    error.put("code", code);
    error.put("message", message);
    return out;
  }

  private void answer(HttpExchange exchange, int status, ObjectNode body) throws IOException {
    byte[] out = json.writeValueAsBytes(body);
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    exchange.sendResponseHeaders(status, out.length);
    try (OutputStream stream = exchange.getResponseBody()) {
      stream.write(out);
    }
  }
}
