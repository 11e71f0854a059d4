package dev.agentsandbox.cli.drill;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The drill's evidence as filed: {@code drill.json} is this record (snake_case), {@code drill.md}
 * its rendering for people ({@link DrillMarkdown}). Everything {@code drill verify} needs to check
 * it against the audit log later is in it: the setup the steps were judged with, each step's
 * observation with the audit rows it relied on, and the chain head seen at the end.
 */
record DrillTranscript(
    String format,
    String drillId,
    String startedAt,
    String endedAt,
    String verdict,
    Host host,
    Versions versions,
    Configuration configuration,
    DrillSetup setup,
    List<StepResult> steps,
    Leftovers leftovers,
    Chain auditChain) {
  static final String FORMAT = "agent-sandbox-drill/1";
  static final String HELD = "held";
  static final String FAILED = "failed";

  static final ObjectMapper JSON =
      new ObjectMapper()
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .enable(SerializationFeature.INDENT_OUTPUT)
          .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);

  DrillTranscript {
    steps = List.copyOf(steps);
  }

  /** Where the drill ran from and against. */
  record Host(String name, String server) {}

  /** The versions of what took part. */
  record Versions(
      String cli, String api, String backend, String runtime, String isolation, String probe) {}

  /** The configuration the drill ran under. */
  record Configuration(
      long version, List<String> effectiveAllow, long ttlSeconds, JsonNode resources) {}

  /**
   * One step: what it tried, each layer's check, its verdict, and what was observed; for a step
   * that attacks another live sandbox, also the command of that sandbox's run ({@code
   * peer_command}, else null).
   */
  record StepResult(
      String name,
      String attack,
      List<String> command,
      List<String> peerCommand,
      List<String> envKeys,
      String verdict,
      List<DrillCheck> checks,
      List<Long> auditRowIds,
      DrillObservation observation) {
    static StepResult of(DrillStep step, DrillObservation seen) {
      List<DrillCheck> checks = step.judge().apply(seen);
      List<Long> ids = new ArrayList<>();
      seen.cited().forEach(r -> ids.add(r.id()));
      return new StepResult(
          step.name(),
          step.attack(),
          step.commandAgainst(seen.peer()),
          step.peer() == null ? null : step.peer().command(),
          step.env().keySet().stream().sorted().toList(),
          DrillStep.held(checks) ? HELD : FAILED,
          checks,
          ids,
          seen);
    }
  }

  /** Whether the drill left anything behind: each of its runs and its status at the end. */
  record Leftovers(String verdict, List<DrillCheck> checks, Map<String, String> runs) {}

  /** The audit chain as verified at the end, and its head. */
  record Chain(
      String verdict,
      boolean verified,
      long rowsChecked,
      List<String> problems,
      long headId,
      String headHash) {}

  /** Whether every step, the clean-up and the chain held. */
  static String verdictOf(List<StepResult> steps, Leftovers leftovers, Chain chain) {
    boolean held =
        !steps.isEmpty()
            && steps.stream().allMatch(s -> s.verdict().equals(HELD))
            && leftovers.verdict().equals(HELD)
            && chain.verdict().equals(HELD);
    return held ? HELD : FAILED;
  }

  void write(Path file) throws IOException {
    JSON.writeValue(file.toFile(), this);
  }

  static DrillTranscript read(Path file) throws IOException {
    DrillTranscript transcript = JSON.readValue(file.toFile(), DrillTranscript.class);
    if (!FORMAT.equals(transcript.format())) {
      throw new IOException(
          "read the drill transcript "
              + file
              + ": format "
              + transcript.format()
              + " (expected "
              + FORMAT
              + ")");
    }
    return transcript;
  }
}
