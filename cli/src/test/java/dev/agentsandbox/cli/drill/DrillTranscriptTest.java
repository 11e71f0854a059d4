package dev.agentsandbox.cli.drill;

import static dev.agentsandbox.cli.drill.DrillFixtures.ATTACK_HELD;
import static dev.agentsandbox.cli.drill.DrillFixtures.PEER_DENIED;
import static dev.agentsandbox.cli.drill.DrillFixtures.PEER_ROWS;
import static dev.agentsandbox.cli.drill.DrillFixtures.RUN;
import static dev.agentsandbox.cli.drill.DrillFixtures.SETUP;
import static dev.agentsandbox.cli.drill.DrillFixtures.TARGET_HELD;
import static dev.agentsandbox.cli.drill.DrillFixtures.attack;
import static dev.agentsandbox.cli.drill.DrillFixtures.ran;
import static dev.agentsandbox.cli.drill.DrillFixtures.target;
import static dev.agentsandbox.cli.drill.DrillFixtures.transcript;
import static dev.agentsandbox.cli.drill.DrillFixtures.withTeardown;
import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.cli.drill.DrillTranscript.Leftovers;
import dev.agentsandbox.cli.drill.DrillTranscript.StepResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The drill's evidence and its rules, without a server: the transcript read back, verify's
 * re-judging, the closing checks.
 */
class DrillTranscriptTest {
  @Test
  void aLongOutputIsTruncatedOnceAndReadsBackUnchanged() {
    String long1 = "drill: x=1\n" + "y".repeat(20_000);
    String once = DrillObservation.truncate(long1);
    assertThat(once)
        .hasSizeLessThan(DrillObservation.MAX_OUTPUT + 40)
        .endsWith("[truncated by the drill]");
    assertThat(DrillObservation.truncate(once)).isEqualTo(once);
  }

  @Test
  void aRunStillLiveAtTheEndFailsTheDrill() {
    Leftovers leftovers = DrillEnd.leftoversOf(Map.of(RUN, "running"), List.of(RUN));
    assertThat(leftovers.verdict()).isEqualTo("failed");
    assertThat(DrillEnd.leftoversOf(Map.of(RUN, "deadline"), List.of()).verdict())
        .isEqualTo("held");
  }

  @Test
  void fewerRunsAtOnceByDefaultWhereTheGuestsAreEmulated() {
    assertThat(Drill.defaultParallel("emulated")).isEqualTo(Drill.PARALLEL_EMULATED);
    assertThat(Drill.defaultParallel("container")).isEqualTo(Drill.PARALLEL);
    assertThat(Drill.PARALLEL_EMULATED).isLessThan(Drill.PARALLEL);
  }

  @Test
  void whatTheAttackLearnsFromTheTargetIsCheckedBeforeItBecomesItsArguments() {
    // The target is a sandbox: what it prints is hostile, and becomes the attack's arguments.
    DrillObservation hostile =
        target(
            "drill: listening=1\ndrill: connection=1\ndrill: self-check=1\n"
                + "drill: address=172.30.0.3;reboot\ndrill: address=172.30.0.4\n"
                + "drill: address=127.0.0.1\ndrill: proxy=172.30.0.2:3128\ndrill: ready=yes\n",
            List.of(),
            "running");
    assertThat(PeerSandboxStep.learnedFromPeer(hostile))
        .contains(List.of("8080", "172.30.0.2:3128", "172.30.0.4"));
    assertThat(
            PeerSandboxStep.learnedFromPeer(
                target(TARGET_HELD.replace("172.30.0.2:3128", "$(reboot):3128"), List.of(), "x")))
        .as("a proxy that is not an address and port")
        .isEmpty();
    assertThat(
            PeerSandboxStep.learnedFromPeer(
                target(TARGET_HELD.replace("drill: ready=yes\n", ""), List.of(), "running")))
        .as("not ready yet")
        .isEmpty();
    StepResult result =
        StepResult.of(
            DrillSteps.byName(SETUP, "another-live-sandbox"),
            attack(ATTACK_HELD, PEER_DENIED, PEER_ROWS, target(TARGET_HELD, List.of(), "killed")));
    assertThat(result.command()).endsWith("drill", "8080", "172.30.0.2:3128", "172.30.0.3");
    assertThat(result.peerCommand()).isNotEmpty();
    assertThat(result.auditRowIds()).contains(14L, 90L, 91L);
  }

  @Test
  void verifyCatchesAVerdictEditedToHeldOverAFailingObservation(@TempDir Path dir)
      throws Exception {
    StepResult failing =
        StepResult.of(
            DrillSteps.byName(SETUP, "direct-connect-without-proxy"),
            ran("drill: code=200\ndrill: exit=0\n", 0, List.of(), withTeardown()));
    assertThat(failing.verdict()).isEqualTo("failed");
    List<DrillCheck> forged =
        failing.checks().stream()
            .map(c -> new DrillCheck(c.layer(), c.expected(), c.seen(), true))
            .toList();
    StepResult edited =
        new StepResult(
            failing.name(),
            failing.attack(),
            failing.command(),
            failing.peerCommand(),
            failing.envKeys(),
            "held",
            forged,
            failing.auditRowIds(),
            failing.observation());
    DrillTranscript transcript = transcript(List.of(edited));
    // Written and read back: the JSON form is the one verify reads.
    Path file = dir.resolve("drill.json");
    transcript.write(file);
    DrillTranscript read = DrillTranscript.read(file);
    assertThat(read.steps().getFirst().observation()).isEqualTo(failing.observation());
    assertThat(DrillVerifier.judgementProblems(read))
        .anySatisfy(p -> assertThat(p).contains("direct-connect-without-proxy"));
    assertThat(Files.readString(dir.resolve("drill.json"))).contains("\"run_id\"");
  }
}
