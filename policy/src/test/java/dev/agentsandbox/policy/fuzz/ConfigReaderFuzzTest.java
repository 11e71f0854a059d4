package dev.agentsandbox.policy.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.InvalidConfigException;
import dev.agentsandbox.policy.config.SandboxConfig;
import java.nio.charset.StandardCharsets;

/**
 * Coverage-guided fuzzing of the configuration reader (Jazzer): any JSON document either reads into
 * a configuration or is refused with {@link InvalidConfigException} (never another exception), and
 * a configuration that reads writes out to a tree that reads back to the same configuration.
 * Regression inputs: {@code src/test/resources/.../ConfigReaderFuzzTestInputs/<method>/}.
 */
class ConfigReaderFuzzTest {
  /**
   * How long each target fuzzes when {@code JAZZER_FUZZ} is set and scripts/fuzz.sh gives no
   * shorter bound (a constant: Error Prone 2.45 crashes on a string literal in this annotation).
   */
  static final String FUZZ_TIME = "30s";

  private static final ObjectMapper JSON = new ObjectMapper();

  @FuzzTest(maxDuration = FUZZ_TIME)
  void aDocumentReadsOrIsRefusedAndRoundTrips(byte[] input) {
    String document = new String(input, StandardCharsets.UTF_8);
    Object tree;
    try {
      tree = JSON.readValue(document, Object.class);
    } catch (JacksonException notJson) {
      return;
    }
    SandboxConfig config;
    try {
      config = SandboxConfig.read(tree);
    } catch (InvalidConfigException refused) {
      assertThat(refused.getMessage()).isNotBlank();
      return;
    }
    assertThat(SandboxConfig.read(config.toTree())).isEqualTo(config);
  }
}
