package dev.agentsandbox.cli.drill;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The shell scripts the drill's runs run, one resource each next to this class ({@code
 * dev/agentsandbox/cli/drill/NAME.sh}), for the workload image's busybox and curl. A script is
 * constant text: whatever differs from one drill to the next (a host, an address, a count) reaches
 * it as a positional argument ({@code sh -c SCRIPT drill ARG...}), never spliced into it, so no
 * value can be read as shell. Arguments rather than environment variables, because the control
 * plane redacts a run's environment values from its output (docs/architecture.md invariant 8): a
 * path or host passed that way would vanish from the very markers the judgement reads.
 *
 * <p>Each script prints what happened as {@code drill: key=value} lines; how those lines are judged
 * is the steps' Java ({@link DrillSteps}), not the script's. {@code DrillScriptTest} checks that
 * every constant's resource exists and that every resource is a constant's.
 */
enum DrillScript {
  UNLISTED_HOST("unlisted-host-through-proxy"),
  DIRECT_CONNECT("direct-connect-without-proxy"),
  PROXY_OVERRIDDEN("proxy-variables-overridden"),
  METADATA("metadata-address"),
  HOST_AND_GATEWAY("host-and-gateway"),
  ANOTHER_SANDBOX("another-live-sandbox"),
  ANOTHER_SANDBOX_TARGET("another-live-sandbox-target"),
  DNS("dns"),
  SECRETS("secrets"),
  PRIVILEGE_ESCALATION("privilege-escalation"),
  FORK_BOMB("fork-bomb"),
  MEMORY_EXHAUSTION("memory-exhaustion"),
  RUN_FOREVER("run-forever");

  /** The script's {@code $0}: what {@code sh -c} names it in its own messages. */
  static final String ARGV0 = "drill";

  private final String resource;
  private volatile String text;

  DrillScript(String name) {
    this.resource = name + ".sh";
  }

  /** The resource's file name, relative to this package. */
  String resource() {
    return resource;
  }

  /** The script, as the resource holds it. */
  String text() {
    String loaded = text;
    if (loaded == null) {
      loaded = load(resource);
      text = loaded;
    }
    return loaded;
  }

  /** The run's command: {@code sh -c SCRIPT drill} and the script's arguments. */
  List<String> command(List<String> args) {
    List<String> command = new ArrayList<>(List.of("sh", "-c", text(), ARGV0));
    command.addAll(args);
    return List.copyOf(command);
  }

  List<String> command(String... args) {
    return command(List.of(args));
  }

  static String load(String resource) {
    try (InputStream in = DrillScript.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException(
            "the drill's script " + resource + " is not on the class path (a broken build)");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("read the drill's script " + resource, e);
    }
  }
}
