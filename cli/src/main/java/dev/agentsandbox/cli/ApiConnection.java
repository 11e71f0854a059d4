package dev.agentsandbox.cli;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * Where the admin API is and how to authenticate: the options every API command shares.
 *
 * <p>The URL: the first that says of {@code --url}, the context named by {@code --context}, {@code
 * AGENT_SANDBOX_URL}, the current context of the config file, {@code http://127.0.0.1:8080}. The
 * token: {@code --token-file} (sent wherever the URL says: both are this command line's), else a
 * token that belongs to that URL — a context's token only to that context's URL, {@code
 * AGENT_SANDBOX_TOKEN} only to {@code AGENT_SANDBOX_URL} (or to the default URL when that is
 * unset). So {@code --url} to another server, a typo or a link, never carries the current context's
 * token: it needs {@code --token-file}. Plain {@code http://} to a host other than this machine is
 * refused unless {@code --insecure} (or the context was saved with it). Tokens come from files,
 * standard input or the environment, never from the command line, where {@code ps} shows them.
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
      description =
          "Base URL of the service (env AGENT_SANDBOX_URL; default "
              + DEFAULT_URL
              + "); another server's URL needs --token-file: a saved token goes only to its own"
              + " URL")
  String url;

  @Option(
      names = "--token-file",
      paramLabel = "FILE",
      description = "Read the token from FILE, - for standard input (env AGENT_SANDBOX_TOKEN)")
  String tokenFile;

  @Option(
      names = "--insecure",
      description =
          "Allow plain http:// to a host other than this machine (the token crosses the network"
              + " in clear)")
  boolean insecure;

  /** Seam for tests: the environment and standard input. */
  Map<String, String> env = System.getenv();

  InputStream stdin = System.in;

  /** A token that may be sent to one URL only, and where it came from. */
  private record Pairing(String from, ServerUrl url, Supplier source) {}

  /** Reads a token when it is chosen (a file that is not chosen is never read). */
  private interface Supplier {
    String read() throws IOException;
  }

  /** Opens a client; the caller closes it. */
  AdminApi open(CommandSpec spec) throws IOException {
    Contexts contexts = Contexts.load(Contexts.location(env));
    Optional<Contexts.Context> named;
    Optional<Contexts.Context> current;
    try {
      named = context != null ? contexts.find(context) : Optional.empty();
      current = context != null ? Optional.empty() : contexts.find(null);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    String envUrl = blankToNull(env.get("AGENT_SANDBOX_URL"));
    String given = firstOf(url, named.map(Contexts.Context::url).orElse(null));
    if (given == null) {
      given = firstOf(envUrl, current.map(Contexts.Context::url).orElse(null));
    }
    if (given == null) {
      given = DEFAULT_URL;
    }
    ServerUrl base;
    try {
      base = ServerUrl.parse(given);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    Optional<Contexts.Context> chosen = named.or(() -> current);
    boolean allowCleartext =
        insecure || chosen.filter(c -> c.insecure() && sameServer(c.url(), base)).isPresent();
    if (base.cleartextOverNetwork() && !allowCleartext) {
      throw new ParameterException(
          spec.commandLine(),
          "connect to "
              + base
              + ": plain http:// to a host other than this machine would send the token in clear"
              + " text (use https://, or --insecure if the network is trusted)");
    }
    String token = token(spec, base, envUrl, named, current);
    return new AdminApi(base.toString(), token);
  }

  private String token(
      CommandSpec spec,
      ServerUrl base,
      String envUrl,
      Optional<Contexts.Context> named,
      Optional<Contexts.Context> current)
      throws IOException {
    String token;
    if (tokenFile != null) {
      token = tokenFile.equals("-") ? readStdin() : read(Path.of(tokenFile), "--token-file");
    } else {
      List<Pairing> candidates = new ArrayList<>();
      named.ifPresent(c -> candidates.add(contextPairing(c)));
      String envToken = env.get("AGENT_SANDBOX_TOKEN");
      if (envToken != null) {
        String pairedUrl = envUrl != null ? envUrl : DEFAULT_URL;
        candidates.add(
            new Pairing(
                "AGENT_SANDBOX_TOKEN (for "
                    + (envUrl != null ? "AGENT_SANDBOX_URL " : "the default URL ")
                    + TerminalText.line(pairedUrl)
                    + ")",
                ServerUrl.tryParse(pairedUrl).orElse(null),
                () -> envToken));
      }
      current.ifPresent(c -> candidates.add(contextPairing(c)));
      candidates.removeIf(c -> c.source() == null);
      Optional<Pairing> paired = candidates.stream().filter(c -> base.equals(c.url())).findFirst();
      if (paired.isEmpty() && !candidates.isEmpty()) {
        throw new ParameterException(
            spec.commandLine(),
            "no token for "
                + base
                + ": "
                + String.join(
                    "; ", candidates.stream().map(c -> "the token of " + c.from()).toList())
                + (candidates.size() == 1 ? " is" : " are")
                + " sent only to its own URL (pass --token-file FILE for "
                + base
                + ", or --context NAME for a saved server)");
      }
      token = paired.isPresent() ? paired.get().source().read() : null;
    }
    if (token == null || token.isBlank()) {
      throw new ParameterException(
          spec.commandLine(),
          "no token: run agent-sandbox login --url URL --token-file FILE, pass --token-file FILE"
              + " or set AGENT_SANDBOX_TOKEN");
    }
    return token.strip();
  }

  private static Pairing contextPairing(Contexts.Context c) {
    return new Pairing(
        "context " + c.name() + " (" + TerminalText.line(c.url()) + ")",
        ServerUrl.tryParse(c.url()).orElse(null),
        c.tokenFile() == null ? null : () -> read(c.tokenFile(), "context " + c.name()));
  }

  private static boolean sameServer(String url, ServerUrl base) {
    return ServerUrl.tryParse(url).map(base::equals).orElse(false);
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

  private static String blankToNull(String value) {
    return value == null || value.isBlank() ? null : value;
  }
}
