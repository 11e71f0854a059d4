package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/** Bad input exits with 2 and one actionable line, never a stack trace; one row per case. */
class ProxyCommandTest {
  @TempDir static Path temp;

  static Stream<Arguments> badInput() throws Exception {
    Path unknownField = temp.resolve("unknown.json");
    Files.writeString(
        unknownField, "{\"listen\":\"127.0.0.1:0\",\"allow\":[],\"alow\":[\"x.test\"]}");
    Path broken = temp.resolve("broken.json");
    Files.writeString(broken, "{\"listen\": ");
    Path wideCidr = temp.resolve("wide.json");
    Files.writeString(
        wideCidr,
        "{\"listen\":\"127.0.0.1:0\",\"allow\":[\"a.test\"],"
            + "\"internal\":[{\"cidr\":\"0.0.0.0/0\",\"ports\":[443]}]}");
    Path badLimit = temp.resolve("limit.json");
    Files.writeString(
        badLimit,
        "{\"listen\":\"127.0.0.1:0\",\"allow\":[\"a.test\"],\"limits\":{\"max_connections\":0}}");
    Path badHosts = temp.resolve("hosts");
    Files.writeString(badHosts, "127.1 short.test\n");
    return Stream.of(
        row("missing --listen", "--listen is required", "--allow", "a.test"),
        row("missing --allow", "--allow is required", "--listen", "127.0.0.1:0"),
        row(
            "bare star entry",
            "a bare * is refused",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "a.test,*"),
        row(
            "IP literal entry",
            "IP addresses are refused",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "127.0.0.1"),
        row(
            "absurd internal CIDR",
            "wider than /16",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "a.test",
            "--internal-cidr",
            "0.0.0.0/0:443"),
        row(
            "mapped internal CIDR",
            "embeds IPv4",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "a.test",
            "--internal-cidr",
            "::ffff:0:0/96:443"),
        row(
            "the finding: the metadata address declared internal",
            "internal CIDR 169.254.169.254/32: covers the metadata address 169.254.169.254",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "a.test",
            "--internal-cidr",
            "169.254.169.254/32:80"),
        row(
            "a /16 holding Alibaba's metadata address",
            "covers the metadata address 100.100.100.200",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "a.test",
            "--internal-cidr",
            "100.100.0.0/16:80"),
        row(
            "an internal CIDR without ports",
            "needs its ports",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "a.test",
            "--internal-cidr",
            "10.20.1.0/24"),
        row(
            "an internal port 65536",
            "'65536' is not a port",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "a.test",
            "--internal-cidr",
            "10.20.1.0/24:65536"),
        row(
            "listen without port",
            "expected HOST:PORT",
            "--listen",
            "127.0.0.1",
            "--allow",
            "a.test"),
        row(
            "duration without unit",
            "needs a unit",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "a.test",
            "--idle-timeout",
            "30"),
        row(
            "hosts file with a short IPv4 form",
            "not an IP address",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "a.test",
            "--hosts",
            badHosts.toString()),
        row(
            "policy file with unknown field",
            "unknown field 'alow'",
            "--policy",
            unknownField.toString()),
        row("policy file that is not JSON", "reading policy file", "--policy", broken.toString()),
        row(
            "policy file with absurd CIDR",
            "internal[0]: internal CIDR 0.0.0.0/0: is wider than /16",
            "--policy",
            wideCidr.toString()),
        row(
            "policy file with zero connections",
            "max_connections",
            "--policy",
            badLimit.toString()),
        row(
            "policy file plus options",
            "cannot be combined",
            "--policy",
            broken.toString(),
            "--listen",
            "127.0.0.1:0"),
        row("unknown option", "Unknown option", "--listne", "127.0.0.1:0"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void badInput(String name, String message, String[] args) {
    PrintStream originalErr = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    StringWriter picocliErr = new StringWriter();
    int exit;
    try {
      System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
      CommandLine line = ProxyMain.commandLine(new ProxyCommand());
      line.setErr(new PrintWriter(picocliErr, true));
      exit = line.execute(args);
    } finally {
      System.setErr(originalErr);
    }
    String output = withoutJazzerLog(captured.toString(StandardCharsets.UTF_8)) + picocliErr;
    assertThat(exit).isEqualTo(ProxyCommand.EXIT_BAD_INPUT);
    assertThat(output.strip().lines()).hasSize(1);
    assertThat(output)
        .startsWith("agent-sandbox proxy: ")
        .contains(message)
        .doesNotContain("\tat ");
  }

  /**
   * The image's launcher form, exactly {@code --policy FILE}, skips picocli ({@link
   * ProxyMain#run}); each bad policy file must still exit 2 with the same one line as through the
   * parser.
   */
  static Stream<Arguments> badPolicyFileWithoutTheParser() throws Exception {
    return Stream.concat(
        badInput()
            .filter(
                row -> {
                  String[] args = (String[]) row.get()[2];
                  return args.length == 2 && args[0].equals("--policy");
                }),
        Stream.of(
            row(
                "policy file that does not exist",
                "reading policy file",
                "--policy",
                "/nonexistent/p.json"),
            row("policy file name with NUL", "reading policy file", "--policy", "a\0b")));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void badPolicyFileWithoutTheParser(String name, String message, String[] args) {
    PrintStream originalErr = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    int exit;
    try {
      System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
      exit = ProxyMain.run(args);
    } finally {
      System.setErr(originalErr);
    }
    String output = withoutJazzerLog(captured.toString(StandardCharsets.UTF_8));
    assertThat(exit).isEqualTo(ProxyCommand.EXIT_BAD_INPUT);
    assertThat(output.strip().lines()).hasSize(1);
    assertThat(output)
        .startsWith("agent-sandbox proxy: ")
        .contains(message)
        .doesNotContain("\tat ");
  }

  @Test
  void aValidPolicyFileBecomesTheSameConfigAsTheOptions() throws Exception {
    Path file = temp.resolve("good.json");
    Files.writeString(
        file,
        """
        {"listen": "127.0.0.1:0", "allow": ["api.vendor.com", "*.cdn.example:8443"],
         "instance_allow": null, "internal": [{"cidr": "10.20.0.0/16", "ports": [443]}],
         "hosts": {"api.vendor.com": ["10.20.1.2"]}, "run_id": "run-42", "decisions": "-",
         "limits": {"idle_timeout_ms": 1000, "max_connections": 5}}
        """);
    ProxyCommand command = new ProxyCommand();
    new CommandLine(command).parseArgs("--policy", file.toString());
    ProxyConfig config = command.options().config();
    assertThat(config.allow().asStrings()).containsExactly("api.vendor.com", "*.cdn.example:8443");
    assertThat(config.instanceAllow()).isEmpty();
    assertThat(config.internal().asStrings()).containsExactly("10.20.0.0/16:443");
    assertThat(config.hosts().orElseThrow()).containsKey("api.vendor.com");
    assertThat(config.runId()).isEqualTo("run-42");
    assertThat(config.limits().idleTimeout().toMillis()).isEqualTo(1000);
    assertThat(config.limits().maxConnections()).isEqualTo(5);
    assertThat(config.limits().connectTimeout()).isEqualTo(Limits.DEFAULTS.connectTimeout());
  }

  private static Arguments row(String name, String message, String... args) {
    return Arguments.of(name, message, args);
  }

  /**
   * Jazzer's agent, attached by this module's fuzz tests in the same JVM, logs each class it
   * instruments to stderr; those lines are the test harness's, not the proxy's.
   */
  private static String withoutJazzerLog(String stderr) {
    return stderr
        .lines()
        .filter(line -> !line.startsWith("INFO: Instrumented "))
        .map(line -> line + "\n")
        .collect(java.util.stream.Collectors.joining());
  }
}
