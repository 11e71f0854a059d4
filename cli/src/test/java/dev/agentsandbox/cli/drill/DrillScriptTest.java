package dev.agentsandbox.cli.drill;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The drill's scripts are resources that the build ships and the steps use: a step that names a
 * script the build lacks, a script no step runs, or a value spliced into a script's text fails
 * here, not in a drill.
 */
class DrillScriptTest {
  private static final DrillSetup SETUP =
      new DrillSetup(
          "d1",
          "drill",
          "unlisted.test",
          "198.18.5.1:8080",
          "169.254.169.254:80",
          List.of("198.18.5.2:9090", "198.18.5.3:22"),
          "resolves.example",
          List.of("/var/run/docker.sock", "/srv/data"),
          List.of("gh"),
          256,
          128,
          30);

  @ParameterizedTest
  @EnumSource(DrillScript.class)
  void eachScriptIsOnTheClassPathAndParses(DrillScript script) throws Exception {
    assertThat(DrillScript.class.getResource(script.resource()))
        .as("resource %s of %s", script.resource(), script)
        .isNotNull();
    assertThat(script.text()).contains("drill: ").endsWith("\n");
    // sh -n reads the script without running it: a syntax error fails the build, not the drill.
    Process check = new ProcessBuilder("sh", "-n").redirectErrorStream(true).start();
    check.getOutputStream().write(script.text().getBytes(StandardCharsets.UTF_8));
    check.getOutputStream().close();
    assertThat(check.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(check.exitValue())
        .as(new String(check.getInputStream().readAllBytes(), StandardCharsets.UTF_8))
        .isZero();
  }

  @Test
  void everyScriptResourceIsOneOfTheSteps() throws IOException, URISyntaxException {
    // The folder DrillScript was loaded from (main's classes, not the tests' of the same package).
    URL self = DrillScript.class.getResource("DrillScript.class");
    assertThat(self).isNotNull();
    assertThat(self.getProtocol()).as("the test reads the classes folder").isEqualTo("file");
    Set<String> resources;
    try (Stream<Path> files = Files.list(Path.of(self.toURI()).getParent())) {
      resources =
          files
              .map(p -> p.getFileName().toString())
              .filter(n -> n.endsWith(".sh"))
              .collect(Collectors.toSet());
    }
    assertThat(resources)
        .as("every script shipped is a DrillScript")
        .containsExactlyInAnyOrderElementsOf(
            Arrays.stream(DrillScript.values()).map(DrillScript::resource).toList());
  }

  @Test
  void everyScriptIsRunByAStepWithTheDrillsValuesAsArgumentsOnly() {
    EnumSet<DrillScript> used = EnumSet.noneOf(DrillScript.class);
    for (DrillStep step : DrillSteps.all(SETUP)) {
      List<List<String>> commands = new ArrayList<>(List.of(step.command()));
      if (step.peer() != null) {
        commands.add(step.peer().command());
      }
      for (List<String> command : commands) {
        if (!command.getFirst().equals("sh")) {
          // The one request the API refuses runs no script.
          assertThat(step.refusedByApi()).as(step.name()).isTrue();
          continue;
        }
        assertThat(command.subList(0, 2)).containsExactly("sh", "-c");
        assertThat(command.get(3)).isEqualTo(DrillScript.ARGV0);
        DrillScript script =
            Arrays.stream(DrillScript.values())
                .filter(s -> s.text().equals(command.get(2)))
                .findFirst()
                .orElseThrow(() -> new AssertionError(step.name() + " runs no DrillScript"));
        used.add(script);
        for (String value : values()) {
          assertThat(script.text())
              .as("%s: a value of the drill is an argument, never the script's text", step.name())
              .doesNotContain(value);
        }
      }
    }
    assertThat(used).as("every script is a step's").isEqualTo(EnumSet.allOf(DrillScript.class));
  }

  @Test
  void theValuesReachTheScriptsAsArguments() {
    assertThat(EgressSteps.unlistedHost(SETUP).command()).endsWith("drill", "unlisted.test");
    assertThat(EgressSteps.proxyOverridden(SETUP).command())
        .endsWith("drill", "198.18.5.1:8080", "unlisted.test");
    assertThat(EgressSteps.hostAndGateway(SETUP).command())
        .endsWith("drill", "198.18.5.2:9090", "198.18.5.3:22");
    assertThat(EgressSteps.dns(SETUP).command())
        .endsWith("drill", "resolves.example", "198.18.5.1");
    assertThat(ContainmentSteps.secrets(SETUP).command())
        .endsWith("drill", "/var/run/docker.sock", "/srv/data");
    assertThat(ContainmentSteps.forkBomb(SETUP).command()).endsWith("drill", "320");
    assertThat(ContainmentSteps.memory(SETUP).command()).endsWith("drill", "192");
    assertThat(PeerSandboxStep.peerListener()).endsWith("drill", "8080");
  }

  @Test
  void aScriptTheBuildLacksIsABrokenBuild() {
    assertThatThrownBy(() -> DrillScript.load("no-such-step.sh"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no-such-step.sh is not on the class path");
  }

  /** Every value of the setup that some script gets, as a whole word of its text would show it. */
  private static List<String> values() {
    List<String> values =
        new ArrayList<>(
            List.of(
                SETUP.unlistedHost(),
                SETUP.outside(),
                DrillSetup.address(SETUP.outside()),
                SETUP.metadata(),
                SETUP.dnsName(),
                "/srv/data",
                "320",
                "192"));
    values.addAll(SETUP.hostTargets());
    return values;
  }
}
