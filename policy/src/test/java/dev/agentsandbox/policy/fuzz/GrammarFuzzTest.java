package dev.agentsandbox.policy.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.agentsandbox.policy.AllowEntry;
import dev.agentsandbox.policy.HostName;
import dev.agentsandbox.policy.InvalidHostException;
import dev.agentsandbox.policy.net.IpLiteral;
import java.nio.charset.StandardCharsets;

/**
 * Coverage-guided fuzzing of the allow-list entry and host-name grammar and of IP literal parsing
 * (Jazzer). Each target checks a property, not only that nothing unexpected is thrown: what parses
 * prints to text that parses back to the same value, and canonical forms are fixed points. Without
 * {@code JAZZER_FUZZ} these run as regression tests over the inputs kept under {@code
 * src/test/resources/.../GrammarFuzzTestInputs/<method>/} (seeds and every crash found);
 * scripts/fuzz.sh fuzzes each one for a bounded time.
 */
class GrammarFuzzTest {
  /**
   * How long each target fuzzes when {@code JAZZER_FUZZ} is set and scripts/fuzz.sh gives no
   * shorter bound (a constant: Error Prone 2.45 crashes on a string literal in this annotation).
   */
  static final String FUZZ_TIME = "30s";

  @FuzzTest(maxDuration = FUZZ_TIME)
  void allowEntryParsesBackFromItsPrintedForm(byte[] input) {
    String raw = new String(input, StandardCharsets.UTF_8);
    AllowEntry entry;
    try {
      entry = AllowEntry.parse(raw);
    } catch (InvalidHostException refused) {
      return;
    }
    String printed = entry.toString();
    assertThat(AllowEntry.parse(printed)).as("parse(%s)", printed).isEqualTo(entry);
    assertThat(entry.matches(entry.domain(), entry.hasPort() ? entry.port() : 443))
        .as("%s matches its own host", printed)
        .isEqualTo(!entry.wildcard());
  }

  @FuzzTest(maxDuration = FUZZ_TIME)
  void canonicalHostNamesAreFixedPoints(byte[] input) {
    String raw = new String(input, StandardCharsets.UTF_8);
    String target;
    try {
      target = HostName.canonicalTargetHost(raw);
    } catch (InvalidHostException refused) {
      return;
    }
    assertThat(HostName.canonicalTargetHost(target)).isEqualTo(target);
    assertThat(target).doesNotContainAnyWhitespaces();
    assertThat(target.length()).isLessThanOrEqualTo(HostName.MAX_NAME_LENGTH);
  }

  @FuzzTest(maxDuration = FUZZ_TIME)
  void ipLiteralsFormatToTextThatParsesToTheSameBytes(byte[] input) {
    String text = new String(input, StandardCharsets.UTF_8);
    byte[] bytes;
    try {
      bytes = IpLiteral.parse(text);
    } catch (IllegalArgumentException refused) {
      return;
    }
    assertThat(bytes.length).isIn(4, 16);
    String formatted = IpLiteral.format(IpLiteral.toAddress(bytes));
    assertThat(IpLiteral.parse(formatted)).as("parse(%s)", formatted).isEqualTo(bytes);
    assertThat(IpLiteral.format(IpLiteral.parseAddress(formatted))).isEqualTo(formatted);
  }
}
