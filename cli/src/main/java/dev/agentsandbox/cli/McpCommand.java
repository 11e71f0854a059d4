package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.mcp.McpServers;
import dev.agentsandbox.mcp.SandboxApi;
import dev.agentsandbox.mcp.SandboxApiException;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code agent-sandbox mcp}: the MCP server over standard input and output, for an MCP host (an
 * IDE, an agent framework) that starts it as a process. Every tool call is an API request with the
 * connection's token, so its scopes and agents apply; stdout carries only the protocol.
 */
@Command(
    name = "mcp",
    mixinStandardHelpOptions = true,
    description = {
      "Serve the sandbox's tools to an MCP client over stdin and stdout",
      "",
      "Tools: run_command, open_session, exec, write_file, read_file, list_files and"
          + " close_session, each an API request made with this connection's token (a token"
          + " limited to agents sees and touches only theirs). Their descriptions name each"
          + " agent's effective allow-list. The token is checked before the first message; then"
          + " standard output carries only JSON-RPC, and diagnostics go to standard error. serve"
          + " offers the same tools over streamable HTTP at /mcp (docs/mcp.md)."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox mcp",
      "  agent-sandbox mcp --url http://127.0.0.1:8080 --token-file ~/.config/sandbox-helper-token"
    })
final class McpCommand implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin ApiConnection connection;

  @Override
  public Integer call() throws IOException, InterruptedException {
    PrintWriter err = spec.commandLine().getErr();
    SandboxApi api;
    try (AdminApi admin = connection.open(spec)) {
      api = SandboxApi.connect(URI.create(admin.base()), admin.token());
    }
    JsonNode self;
    try {
      self = api.self();
    } catch (SandboxApiException e) {
      err.println("mcp: " + e.getMessage() + " (" + e.code() + ")");
      err.flush();
      return Main.FAILED;
    }
    err.println(
        "mcp: serving on standard input and output as token "
            + self.path("name").asText()
            + (self.path("agents").isArray()
                ? ", limited to agents " + join(self.path("agents"))
                : ", every agent"));
    err.flush();
    // The process's own descriptors: picocli's writers and System.out may be wrapped or buffered,
    // and nothing but the protocol may reach standard output.
    McpServers.serveStdio(
        api, new FileInputStream(FileDescriptor.in), new FileOutputStream(FileDescriptor.out));
    return 0;
  }

  private static String join(JsonNode names) {
    StringBuilder out = new StringBuilder();
    names.forEach(n -> out.append(out.isEmpty() ? "" : ", ").append(n.asText()));
    return out.toString();
  }
}
