package dev.agentsandbox.bench;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * What to run and how much of it; {@code --quick} shrinks every count and duration for a smoke run.
 */
record BenchOptions(
    List<String> targets,
    Path workDir,
    Optional<Path> out,
    Optional<Path> proxyJar,
    String proxyLabel,
    String proxyJava,
    List<String> proxyJavaOptions,
    String squid,
    String tinyproxy,
    long clockTicksPerSecond,
    boolean quick) {

  BenchOptions {
    targets = List.copyOf(targets);
    proxyJavaOptions = List.copyOf(proxyJavaOptions);
    for (String target : targets) {
      if (!target.equals("direct")) {
        ProxyKind.fromLabel(target);
      }
    }
    if (proxyLabel.isBlank() || proxyLabel.contains("|")) {
      throw new IllegalArgumentException("--proxy-label must be a non-empty table cell");
    }
    if (clockTicksPerSecond < 1) {
      throw new IllegalArgumentException("--clk-tck must be positive");
    }
  }

  int startTrials() {
    return quick ? 2 : 5;
  }

  int setupWarmup() {
    return quick ? 50 : 300;
  }

  int setupCount() {
    return quick ? 300 : 3000;
  }

  Duration throughputWindow() {
    return Duration.ofSeconds(quick ? 1 : 4);
  }

  int throughputRepeats() {
    return quick ? 1 : 3;
  }

  Duration httpWindow() {
    return Duration.ofSeconds(quick ? 1 : 5);
  }

  int httpConnections() {
    return 8;
  }

  int[] idleStages() {
    return quick ? new int[] {200, 1000} : new int[] {1000, 5000};
  }

  Duration settle() {
    return Duration.ofSeconds(quick ? 1 : 3);
  }

  static BenchOptions parse(String[] args) {
    List<String> targets = List.of("direct", "agent-sandbox", "squid", "tinyproxy");
    Path workDir = null;
    Optional<Path> out = Optional.empty();
    Optional<Path> proxyJar = Optional.empty();
    String proxyLabel = "agent-sandbox";
    String proxyJava = ProcessHandle.current().info().command().orElse("java");
    List<String> proxyJavaOptions = new ArrayList<>();
    String squid = "/usr/sbin/squid";
    String tinyproxy = "/usr/bin/tinyproxy";
    long clockTicks = 100;
    boolean quick = false;
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (flag.equals("--quick")) {
        quick = true;
        continue;
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(flag + " needs a value");
      }
      String value = args[++i];
      switch (flag) {
        case "--targets" -> targets = Arrays.asList(value.split(","));
        case "--work" -> workDir = Path.of(value);
        case "--out" -> out = Optional.of(Path.of(value));
        case "--proxy-jar" -> proxyJar = Optional.of(Path.of(value));
        case "--proxy-label" -> proxyLabel = value;
        case "--proxy-java" -> proxyJava = value;
        case "--proxy-java-opts" -> proxyJavaOptions = splitOptions(value);
        case "--squid" -> squid = value;
        case "--tinyproxy" -> tinyproxy = value;
        case "--clk-tck" -> clockTicks = Long.parseLong(value);
        default -> throw new IllegalArgumentException("unknown flag " + flag);
      }
    }
    if (workDir == null) {
      throw new IllegalArgumentException("--work DIR is required (configs and logs go there)");
    }
    return new BenchOptions(
        targets,
        workDir,
        out,
        proxyJar,
        proxyLabel,
        proxyJava,
        proxyJavaOptions,
        squid,
        tinyproxy,
        clockTicks,
        quick);
  }

  private static List<String> splitOptions(String value) {
    List<String> options = new ArrayList<>();
    for (String option : value.trim().split("\\s+")) {
      if (!option.isEmpty()) {
        options.add(option);
      }
    }
    return options;
  }
}
