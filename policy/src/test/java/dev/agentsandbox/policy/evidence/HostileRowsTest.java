package dev.agentsandbox.policy.evidence;

import static dev.agentsandbox.policy.evidence.Observations.config;
import static dev.agentsandbox.policy.evidence.Observations.deny;
import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.AllowEntry;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.SandboxConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Rows are untrusted text: random hosts built from the characters that matter to the grammar (dots,
 * stars, colons, brackets, case, digits, hyphens, non-ASCII, white space) and random ports and
 * reasons never yield an entry the configuration reader refuses, nor a wildcard over a public
 * suffix. Seeded; the seed is printed.
 */
class HostileRowsTest {
  private static final String[] PIECES = {
    "a",
    "b",
    "x1",
    "-",
    ".",
    ".",
    "*",
    "*.",
    ":",
    "443",
    "[",
    "]",
    "::1",
    "A",
    "É",
    "ü",
    " ",
    "\t",
    "\n",
    "/",
    "@",
    "%2e",
    "\\",
    "0x7f",
    "127",
    "com",
    "co.uk",
    "github.io",
    "test",
    "xn--",
    "_",
    "..",
    "example"
  };
  private static final String[] REASONS = {
    "not-allowed",
    "port-not-allowed",
    "instance-policy",
    "ip-literal",
    "method-not-allowed",
    "",
    "NOT-ALLOWED"
  };

  @Test
  void noHostileRowYieldsAnEntryTheReaderRefuses() {
    long seed = System.nanoTime();
    System.out.println("HostileRowsTest seed " + seed);
    Random random = new Random(seed);
    SandboxConfig config = config(List.of("pypi.org"));
    for (int round = 0; round < 200; round++) {
      List<EgressObservation> rows = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        StringBuilder host = new StringBuilder();
        int pieces = 1 + random.nextInt(8);
        for (int p = 0; p < pieces; p++) {
          host.append(PIECES[random.nextInt(PIECES.length)]);
        }
        int port = random.nextInt(10) == 0 ? random.nextInt(70_000) - 10 : 443;
        rows.add(deny(host.toString(), port, REASONS[random.nextInt(REASONS.length)], "r" + i));
      }
      EgressProposal proposal =
          EgressProposer.propose("planner", config, EgressPolicy.DEFAULT, rows);
      for (ProposedEntry entry : proposal.entries()) {
        assertThat(AllowEntry.parse(entry.entry()).toString())
            .as("seed %d: %s reads back unchanged", seed, entry.entry())
            .isEqualTo(entry.entry());
        AllowEntry parsed = AllowEntry.parse(entry.entry());
        if (parsed.wildcard()) {
          assertThat(PublicSuffixList.wildcardAllowedOver(parsed.domain()))
              .as("seed %d: %s is not over a public suffix", seed, entry.entry())
              .isTrue();
        }
      }
      assertThat(
              SandboxConfig.read(EgressProposerTest.afterTree(config, proposal))
                  .agents()
                  .get("planner")
                  .allow())
          .as("seed %d", seed)
          .isEqualTo(proposal.allowAfter());
    }
  }
}
