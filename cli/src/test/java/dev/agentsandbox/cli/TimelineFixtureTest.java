package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The CLI prints every timeline the code before the typed vocabulary served (main at 1e0b859,
 * server's {@code audit-fixture-1e0b859}) exactly as that code's CLI printed it: the answers, one
 * line per row and the chain statement, now read through {@code RunTimeline} and the vocabulary.
 */
class TimelineFixtureTest {
  private static final String FIXTURE = "timeline-fixture-1e0b859/";

  static Stream<String> timelines() {
    return Stream.of(
        "deadline",
        "egress",
        "fails",
        "killed",
        "lost",
        "mismatch",
        "nolaunch",
        "orphan",
        "pooled",
        "proxydies",
        "sticky",
        "warm");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("timelines")
  void printsAsTheOldCliDid(String name) throws IOException {
    JsonNode timeline;
    try (InputStream in = resource("timeline-" + name + ".json")) {
      timeline = new ObjectMapper().readTree(in);
    }
    List<String> lines = new ArrayList<>(TimelineView.answers(timeline));
    for (List<String> row : TimelineView.rows(timeline)) {
      lines.add(String.join(" | ", row));
    }
    lines.add(TimelineView.chain(timeline));
    String expected;
    try (InputStream in = resource("timeline-" + name + ".txt")) {
      expected = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertThat(String.join("\n", lines) + "\n").isEqualTo(expected);
  }

  private static InputStream resource(String name) {
    InputStream in = TimelineFixtureTest.class.getResourceAsStream(FIXTURE + name);
    if (in == null) {
      throw new IllegalStateException("fixture resource missing: " + FIXTURE + name);
    }
    return in;
  }
}
