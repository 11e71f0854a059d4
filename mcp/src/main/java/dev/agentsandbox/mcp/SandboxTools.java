package dev.agentsandbox.mcp;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.modelcontextprotocol.spec.McpSchema;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * The tools, for one caller: each is an ordinary request of the admin API made with the caller's
 * own token (so its scopes and agents apply exactly as to any client), answered as a text a model
 * reads and the same facts as structured content. A refusal or failure of the API is a tool error
 * ({@code isError}) carrying the API's code and message, never a protocol error or a dropped
 * connection. Each description ends with the effective allow-list of every agent the token may use.
 */
final class SandboxTools {
  /** The most bytes of a file {@code read_file} answers as text. */
  static final int READ_LIMIT_BYTES = 256 * 1024;

  /** One tool: its definition and what a call does. */
  record Tool(McpSchema.Tool definition, BiFunction<SandboxApi, Args, Reports.Answer> call) {}

  private final ObjectMapper json;
  private final Reports reports;

  SandboxTools(ObjectMapper json) {
    this.json = json;
    this.reports = new Reports(json);
  }

  /** The tools, described for {@code policies} (what the caller's token may reach). */
  List<Tool> tools(AgentPolicies policies) {
    String egress = " " + policies.describe();
    return List.of(
        new Tool(
            tool(
                "run_command",
                "Run one command in a new sandbox of the agent and wait for it to end (up to the"
                    + " agent's ttl). Answers the exit status, the output's tail and every egress"
                    + " connection the sandbox's proxy refused, with the reason."
                    + egress,
                schema(
                    Map.of(
                        "agent", STRING,
                        "command", COMMAND,
                        "env", ENV,
                        "labels", ENV),
                    "agent",
                    "command")),
            this::runCommand),
        new Tool(
            tool(
                "open_session",
                "Open a session: a sandbox of the agent that takes commands (exec) and files"
                    + " (write_file, read_file, list_files) one at a time in /workspace, until"
                    + " close_session, its idle time-out or its hard deadline."
                    + egress,
                schema(
                    Map.of("agent", STRING, "env", ENV, "labels", ENV, "idle_seconds", WHOLE),
                    "agent")),
            this::openSession),
        new Tool(
            tool(
                "exec",
                "Run one step in an open session (no shell: [\"sh\", \"-c\", \"...\"] for one) and"
                    + " answer its exit status, stdout and stderr tails and the egress refusals"
                    + " made while it ran. cwd is a folder under /workspace."
                    + egress,
                schema(
                    Map.of(
                        "run_id", STRING,
                        "command", COMMAND,
                        "env", ENV,
                        "cwd", STRING,
                        "stdin", STRING,
                        "timeout_seconds", WHOLE),
                    "run_id",
                    "command")),
            this::exec),
        new Tool(
            tool(
                "write_file",
                "Write one UTF-8 text file under /workspace of an open session (path absolute"
                    + " under /workspace or relative to it; missing folders are created).",
                schema(
                    Map.of("run_id", STRING, "path", STRING, "content", STRING),
                    "run_id",
                    "path",
                    "content")),
            this::writeFile),
        new Tool(
            tool(
                "read_file",
                "Read one UTF-8 text file under /workspace of an open session (at most "
                    + READ_LIMIT_BYTES / 1024
                    + " KiB; links are never followed).",
                schema(Map.of("run_id", STRING, "path", STRING), "run_id", "path")),
            this::readFile),
        new Tool(
            tool(
                "list_files",
                "List a folder under /workspace of an open session (name, kind, size).",
                schema(Map.of("run_id", STRING, "path", STRING), "run_id")),
            this::listFiles),
        new Tool(
            tool(
                "close_session",
                "Close a session: running steps end, files under /workspace/out are kept as the"
                    + " run's artifacts, the sandbox is removed. Answers the session's result.",
                schema(Map.of("run_id", STRING), "run_id")),
            this::closeSession));
  }

  /**
   * Calls {@code tool} with {@code arguments}: its answer, or the API's refusal as a tool error.
   */
  McpSchema.CallToolResult call(Tool tool, SandboxApi api, Map<String, Object> arguments) {
    Reports.Answer answer;
    boolean error = false;
    try {
      answer = tool.call().apply(api, new Args(tool.definition().name(), arguments));
    } catch (SandboxApiException e) {
      answer = reports.error(e);
      error = true;
    }
    return McpSchema.CallToolResult.builder()
        .addTextContent(answer.text())
        .structuredContent(json.convertValue(answer.structured(), Map.class))
        .isError(error)
        .build();
  }

  private Reports.Answer runCommand(SandboxApi api, Args args) {
    ObjectNode body = api.object();
    body.put("agent", args.string("agent"));
    args.strings("command").forEach(body.putArray("command")::add);
    putMap(body, "env", args.stringMap("env"));
    putMap(body, "labels", args.stringMap("labels"));
    return reports.run(api.run(body));
  }

  private Reports.Answer openSession(SandboxApi api, Args args) {
    ObjectNode body = api.object();
    body.put("agent", args.string("agent"));
    putMap(body, "env", args.stringMap("env"));
    putMap(body, "labels", args.stringMap("labels"));
    args.optionalWhole("idle_seconds").ifPresent(s -> body.put("idle_seconds", s));
    return reports.opened(api.openSession(body));
  }

  private Reports.Answer exec(SandboxApi api, Args args) {
    String runId = args.string("run_id");
    ObjectNode body = api.object();
    args.strings("command").forEach(body.putArray("command")::add);
    putMap(body, "env", args.stringMap("env"));
    args.optionalString("cwd").ifPresent(c -> body.put("cwd", c));
    args.optionalString("stdin").ifPresent(s -> body.put("stdin", s));
    args.optionalWhole("timeout_seconds").ifPresent(t -> body.put("timeout_seconds", t));
    return reports.step(api.exec(runId, body));
  }

  private Reports.Answer writeFile(SandboxApi api, Args args) {
    String runId = args.string("run_id");
    String path = args.string("path");
    byte[] content = args.string("content").getBytes(StandardCharsets.UTF_8);
    return reports.written(api.writeFile(runId, path, content));
  }

  private Reports.Answer readFile(SandboxApi api, Args args) {
    String runId = args.string("run_id");
    String path = args.string("path");
    byte[] bytes = api.readFile(runId, path);
    ObjectNode out = json.createObjectNode();
    out.put("path", path);
    out.put("size", bytes.length);
    if (bytes.length > READ_LIMIT_BYTES) {
      throw new SandboxApiException(
          413,
          "file_too_large",
          "read "
              + path
              + " in session "
              + runId
              + ": it has "
              + bytes.length
              + " bytes, more than read_file answers ("
              + READ_LIMIT_BYTES
              + "; read a part with exec, such as [\"tail\", \"-c\", \"65536\", \""
              + Texts.bounded(path)
              + "\"])");
    }
    String text;
    try {
      text =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(bytes))
              .toString();
    } catch (CharacterCodingException e) {
      throw new SandboxApiException(
          415,
          "not_text",
          "read "
              + path
              + " in session "
              + runId
              + ": it is not UTF-8 text (look at it with exec, such as [\"od\", \"-c\", \""
              + Texts.bounded(path)
              + "\"])");
    }
    out.put("content", text);
    return new Reports.Answer(text, out);
  }

  private Reports.Answer listFiles(SandboxApi api, Args args) {
    String runId = args.string("run_id");
    return reports.listing(api.listFiles(runId, args.optionalString("path").orElse("/workspace")));
  }

  private Reports.Answer closeSession(SandboxApi api, Args args) {
    return reports.run(api.close(args.string("run_id")));
  }

  private static void putMap(ObjectNode body, String field, Map<String, String> values) {
    if (!values.isEmpty()) {
      ObjectNode node = body.putObject(field);
      values.forEach(node::put);
    }
  }

  private static final Map<String, Object> STRING = Map.of("type", "string");
  private static final Map<String, Object> WHOLE = Map.of("type", "integer", "minimum", 1);
  private static final Map<String, Object> COMMAND =
      Map.of("type", "array", "items", Map.of("type", "string"), "minItems", 1);
  private static final Map<String, Object> ENV =
      Map.of("type", "object", "additionalProperties", Map.of("type", "string"));

  private static McpSchema.JsonSchema schema(Map<String, Object> properties, String... required) {
    return new McpSchema.JsonSchema(
        "object", Map.copyOf(properties), List.of(required), false, null, null);
  }

  private static McpSchema.Tool tool(String name, String description, McpSchema.JsonSchema input) {
    return McpSchema.Tool.builder().name(name).description(description).inputSchema(input).build();
  }
}
