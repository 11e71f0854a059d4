package dev.agentsandbox.policy.run;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RunLabelsTest {
  @ParameterizedTest(name = "accepted: {0}={1}")
  @CsvSource(
      delimiter = '|',
      value = {
        "owner | alice",
        "task-ref | JIRA-1042",
        "engagement_code | ENG.2026.7",
        "example.com/owner | bob",
        "owner | ''",
        "a | b"
      })
  void accepted(String key, String value) {
    assertThat(RunLabels.problems(Map.of(key, value))).isEmpty();
  }

  @ParameterizedTest(name = "refused: {0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "the reaper's run-id key (would hide a run from cleanup) | agent-sandbox.dev/run-id | x",
        "the reaper's expiry key | agent-sandbox.dev/expires-at | 9999999999",
        "the managed-by key | app.kubernetes.io/managed-by | someone-else",
        "a value with a space | owner | alice smith",
        "a value with a colon | owner | a:b",
        "a value ending in a dash | owner | alice-",
        "a value of 64 characters | owner | aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "an empty key | '' | x",
        "an upper-case prefix | Example.com/owner | x",
        "an empty name after the prefix | example.com/ | x",
        "a key with a newline (log forging) | 'own\ner' | x",
      })
  void refused(String why, String key, String value) {
    assertThat(RunLabels.problems(Map.of(key, value))).as(why).hasSize(1);
  }

  @Test
  void tooManyLabels() {
    Map<String, String> labels = new HashMap<>();
    for (int i = 0; i <= RunLabels.MAX_LABELS; i++) {
      labels.put("k" + i, "v");
    }
    assertThat(RunLabels.problems(labels)).first().asString().contains("at most 32 labels");
  }
}
