package dev.agentsandbox.cli;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * Where the admin API is and how to authenticate: the options every API command shares.
 *
 * <p>The first that says wins: {@code --url}/{@code --token-file}; the context named by {@code
 * --context}; the environment ({@code AGENT_SANDBOX_URL}, {@code AGENT_SANDBOX_TOKEN}); the current
 * context of the config file; {@code http://127.0.0.1:8080}. Tokens come from files, standard input
 * or the environment, never from the command line, where {@code ps} shows them.
 */
final class ApiConnection {
  static final String DEFAULT_URL = "http://127.0.0.1:8080";

  @Option(
      names = "--context",
      paramLabel = "NAME",
      description = "Use this context of the config file (see login)")
  String context;

  @Option(
      names = "--url",
      paramLabel = "URL",
      description = "Base URL of the service (env AGENT_SANDBOX_URL; default " + DEFAULT_URL + ")")
  String url;

  @Option(
      names = "--token-file",
      paramLabel = "FILE",
      description = "Read the token from FILE, - for standard input (env AGENT_SANDBOX_TOKEN)")
  String tokenFile;

  /** Seam for tests: the environment and standard input. */
  Map<String, String> env = System.getenv();

  InputStream stdin = System.in;

  /** Opens a client; the caller closes it. */
  AdminApi open(CommandSpec spec) throws IOException {
    Optional<Contexts.Context> named = Optional.empty();
    Optional<Contexts.Context> current = Optional.empty();
    Contexts contexts = Contexts.load(Contexts.location(env));
    try {
      if (context != null) {
        named = contexts.find(context);
      } else {
        current = contexts.find(null);
      }
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    String base = firstOf(url, named.map(Contexts.Context::url).orElse(null));
    if (base == null) {
      base = firstOf(env.get("AGENT_SANDBOX_URL"), current.map(Contexts.Context::url).orElse(null));
    }
    if (base == null) {
      base = DEFAULT_URL;
    }
    String token = token(spec, named, current);
    return new AdminApi(base, token);
  }

  private String token(
      CommandSpec spec, Optional<Contexts.Context> named, Optional<Contexts.Context> current)
      throws IOException {
    String token;
    if (tokenFile != null) {
      token = tokenFile.equals("-") ? readStdin() : read(Path.of(tokenFile), "--token-file");
    } else if (named.isPresent() && named.get().tokenFile() != null) {
      token = read(named.get().tokenFile(), "context " + named.get().name());
    } else if (env.get("AGENT_SANDBOX_TOKEN") != null) {
      token = env.get("AGENT_SANDBOX_TOKEN");
    } else if (current.isPresent() && current.get().tokenFile() != null) {
      token = read(current.get().tokenFile(), "context " + current.get().name());
    } else {
      token = null;
    }
    if (token == null || token.isBlank()) {
      throw new ParameterException(
          spec.commandLine(),
          "no token: run agent-sandbox login --url URL --token-file FILE, pass --token-file FILE"
              + " or set AGENT_SANDBOX_TOKEN");
    }
    return token.strip();
  }

  private String readStdin() throws IOException {
    return new String(stdin.readNBytes(64 * 1024), StandardCharsets.UTF_8);
  }

  static String read(Path file, String from) throws IOException {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new IOException("read the token file " + file + " (" + from + "): no such file", e);
    }
  }

  private static String firstOf(String a, String b) {
    return a != null ? a : b;
  }
}
