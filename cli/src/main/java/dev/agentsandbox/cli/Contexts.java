package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The command line's own configuration file: named servers ("contexts"), each a URL and the file
 * that holds its token, and which one is current. The file names token files, never tokens, so it
 * can be shown and copied without leaking a secret.
 *
 * <pre>
 * current-context: local
 * contexts:
 *   local:
 *     url: http://127.0.0.1:8080
 *     token-file: /home/me/agent-sandbox/data/admin-token
 *   lab:
 *     url: http://10.1.2.3:8080
 *     token-file: /home/me/.secrets/lab-token
 *     insecure: true
 * </pre>
 *
 * <p>A context's token is sent only to that context's URL ({@link ApiConnection}); {@code insecure}
 * records that {@code login --insecure} accepted plain HTTP to a host other than this machine.
 */
final class Contexts {
  /** Environment variable naming the file instead of the default. */
  static final String ENV = "AGENT_SANDBOX_CONFIG";

  /** One named server. */
  record Context(String name, String url, Path tokenFile, boolean insecure) {}

  private final Path file;
  private final Map<String, Context> contexts;
  private final String current;

  private Contexts(Path file, Map<String, Context> contexts, String current) {
    this.file = file;
    this.contexts = contexts;
    this.current = current;
  }

  /** Where the file is: {@code $AGENT_SANDBOX_CONFIG}, else under the XDG config directory. */
  static Path location(Map<String, String> env) {
    String override = env.get(ENV);
    if (override != null && !override.isBlank()) {
      return Path.of(override);
    }
    String xdg = env.get("XDG_CONFIG_HOME");
    Path base =
        xdg != null && !xdg.isBlank()
            ? Path.of(xdg)
            : Path.of(System.getProperty("user.home"), ".config");
    return base.resolve("agent-sandbox").resolve("config.yaml");
  }

  /** Reads the file; a missing file is an empty configuration. */
  static Contexts load(Path file) throws IOException {
    Map<String, Context> contexts = new LinkedHashMap<>();
    if (!Files.exists(file)) {
      return new Contexts(file, contexts, null);
    }
    JsonNode root;
    try {
      root = Printer.YAML.readTree(Files.readString(file, StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new IOException(
          "read " + file + ": not valid YAML (" + firstLine(e.getMessage()) + ")", e);
    }
    if (root == null || root.isMissingNode() || root.isNull()) {
      return new Contexts(file, contexts, null);
    }
    root.path("contexts")
        .properties()
        .forEach(
            entry -> {
              JsonNode value = entry.getValue();
              String tokenFile = value.path("token-file").asText("");
              contexts.put(
                  entry.getKey(),
                  new Context(
                      entry.getKey(),
                      value.path("url").asText(""),
                      tokenFile.isEmpty() ? null : Path.of(tokenFile),
                      value.path("insecure").asBoolean(false)));
            });
    String current = root.path("current-context").asText(null);
    return new Contexts(file, contexts, current);
  }

  Path file() {
    return file;
  }

  /** The named context, or the current one when {@code name} is null. */
  Optional<Context> find(String name) {
    if (name == null) {
      return current == null ? Optional.empty() : Optional.ofNullable(contexts.get(current));
    }
    Context context = contexts.get(name);
    if (context == null) {
      throw new IllegalArgumentException(
          "use context "
              + name
              + ": "
              + file
              + " has no such context (known: "
              + (contexts.isEmpty() ? "none" : String.join(", ", contexts.keySet()))
              + "; add one with agent-sandbox login)");
    }
    return Optional.of(context);
  }

  List<Context> all() {
    return new ArrayList<>(contexts.values());
  }

  String current() {
    return current;
  }

  /** Adds or replaces a context and makes it current. */
  Contexts with(Context context) {
    Map<String, Context> next = new LinkedHashMap<>(contexts);
    next.put(context.name(), context);
    return new Contexts(file, next, context.name());
  }

  /** Makes the named context current. */
  Contexts use(String name) {
    find(name);
    return new Contexts(file, contexts, name);
  }

  /** Writes the file atomically, readable by its owner only. */
  void save() throws IOException {
    ObjectNode root = Printer.YAML.createObjectNode();
    if (current != null) {
      root.put("current-context", current);
    }
    ObjectNode all = root.putObject("contexts");
    for (Context context : contexts.values()) {
      ObjectNode node = all.putObject(context.name());
      node.put("url", context.url());
      if (context.tokenFile() != null) {
        node.put("token-file", context.tokenFile().toString());
      }
      if (context.insecure()) {
        node.put("insecure", true);
      }
    }
    Path parent = file.toAbsolutePath().getParent();
    Files.createDirectories(parent);
    Path tmp = Files.createTempFile(parent, ".config", ".tmp");
    try {
      Files.writeString(tmp, Printer.YAML.writeValueAsString(root), StandardCharsets.UTF_8);
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  private static String firstLine(String message) {
    if (message == null) {
      return "unreadable";
    }
    int newline = message.indexOf('\n');
    return newline < 0 ? message : message.substring(0, newline);
  }
}
