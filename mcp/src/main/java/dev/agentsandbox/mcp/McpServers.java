package dev.agentsandbox.mcp;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures;
import io.modelcontextprotocol.server.McpStatelessServerFeatures;
import io.modelcontextprotocol.server.McpStatelessSyncServer;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpStatelessServerTransport;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * The MCP server of the tools in {@link SandboxTools}, built on the official MCP Java SDK: over
 * standard input and output for {@code agent-sandbox mcp}, and per request for {@code serve}'s
 * {@code /mcp} ({@link McpHttpHandler}).
 */
public final class McpServers {
  static final String NAME = "agent-sandbox";

  static final String INSTRUCTIONS =
      "Tools of Agent Sandbox: run commands in sandboxes whose network is default-deny (only the"
          + " agent's allow-list is reachable, through a proxy that reports every refusal with its"
          + " reason). run_command runs one command in a sandbox of its own; open_session, exec,"
          + " write_file, read_file, list_files and close_session work in one sandbox step by"
          + " step. A refusal of the API comes back as a tool error with its code.";

  private McpServers() {}

  /**
   * Serves the tools for {@code api}'s token on {@code in} and {@code out} (newline-delimited
   * JSON-RPC) until {@code in} ends. Nothing else may write to {@code out}.
   */
  public static void serveStdio(SandboxApi api, InputStream in, OutputStream out)
      throws InterruptedException {
    ObjectMapper json = new ObjectMapper();
    SandboxTools tools = new SandboxTools(json);
    AgentPolicies policies = AgentPolicies.read(api);
    CountDownLatch ended = new CountDownLatch(1);
    List<McpServerFeatures.SyncToolSpecification> specs =
        tools.tools(policies).stream()
            .map(
                tool ->
                    McpServerFeatures.SyncToolSpecification.builder()
                        .tool(tool.definition())
                        .callHandler(
                            (exchange, request) -> tools.call(tool, api, request.arguments()))
                        .build())
            .toList();
    McpSyncServer server =
        McpServer.sync(new StdioServerTransportProvider(mapper(json), untilEnd(in, ended), out))
            .serverInfo(NAME, version())
            .instructions(INSTRUCTIONS)
            .capabilities(McpSchema.ServerCapabilities.builder().tools(false).build())
            .tools(specs)
            .build();
    try {
      ended.await();
    } finally {
      server.closeGracefully();
    }
  }

  /** A stateless server of the tools for one request's caller, on {@code transport}. */
  static McpStatelessSyncServer statelessFor(
      SandboxApi api, ObjectMapper json, McpStatelessServerTransport transport) {
    SandboxTools tools = new SandboxTools(json);
    AgentPolicies policies = AgentPolicies.read(api);
    List<McpStatelessServerFeatures.SyncToolSpecification> specs =
        tools.tools(policies).stream()
            .map(
                tool ->
                    McpStatelessServerFeatures.SyncToolSpecification.builder()
                        .tool(tool.definition())
                        .callHandler(
                            (context, request) -> tools.call(tool, api, request.arguments()))
                        .build())
            .toList();
    return McpServer.sync(transport)
        .serverInfo(NAME, version())
        .instructions(INSTRUCTIONS)
        .capabilities(McpSchema.ServerCapabilities.builder().tools(false).build())
        .jsonMapper(mapper(json))
        .tools(specs)
        .build();
  }

  static McpJsonMapper mapper(ObjectMapper json) {
    return new JacksonMcpJsonMapper(json);
  }

  static String version() {
    String version = McpServers.class.getPackage().getImplementationVersion();
    return version == null ? "dev" : version;
  }

  /** {@code in}, counting {@code ended} down when it ends or fails. */
  private static InputStream untilEnd(InputStream in, CountDownLatch ended) {
    return new FilterInputStream(in) {
      @Override
      public int read() throws IOException {
        return watch(super.read());
      }

      @Override
      public int read(byte[] buffer, int offset, int length) throws IOException {
        return watch(super.read(buffer, offset, length));
      }

      private int watch(int result) {
        if (result < 0) {
          ended.countDown();
        }
        return result;
      }

      @Override
      public void close() throws IOException {
        ended.countDown();
        super.close();
      }
    };
  }
}
