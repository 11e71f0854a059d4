package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.InvalidConfigException;
import dev.agentsandbox.policy.config.Loosening;
import dev.agentsandbox.policy.config.SandboxConfig;
import org.junit.jupiter.api.Test;

/** The command line reads and compares each governed document by the server's own description. */
class GovernedDocumentTest {
  private final ObjectMapper json = new ObjectMapper();

  @Test
  void keysAreTheServersStoreKeys() {
    assertThat(GovernedDocument.SANDBOX_CONFIG.key()).isEqualTo("agent-sandbox");
    assertThat(GovernedDocument.EGRESS_POLICY.key()).isEqualTo("egress-policy");
  }

  @Test
  void aSandboxChangeIsComparedByTheServersRulesWithoutWhatTheServerComputes() throws Exception {
    ObjectNode before = json.valueToTree(SandboxConfig.DEFAULT.toTree());
    before.put("version", 3);
    before.put("updated_by", "admin");
    ObjectNode after = before.deepCopy();
    after.put("enabled", true);
    after.put("reason", "CHG-7");
    assertThat(GovernedDocument.SANDBOX_CONFIG.loosenings(before, after))
        .extracting(Loosening::kind)
        .containsExactly(Loosening.Kind.ENABLED_TURNED_ON);
  }

  @Test
  void theEgressPolicyIsReadAsAnEgressPolicy() throws Exception {
    ObjectNode policy = json.valueToTree(EgressPolicy.DEFAULT.toTree());
    assertThat(GovernedDocument.EGRESS_POLICY.loosenings(policy, policy)).isEmpty();
    ObjectNode sandbox = json.valueToTree(SandboxConfig.DEFAULT.toTree());
    assertThatThrownBy(() -> GovernedDocument.EGRESS_POLICY.loosenings(policy, sandbox))
        .isInstanceOf(InvalidConfigException.class)
        .hasMessageContaining("unknown field");
  }
}
