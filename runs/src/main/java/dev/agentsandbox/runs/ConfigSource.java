package dev.agentsandbox.runs;

import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.SandboxConfig;

/** Where the run service reads the configuration in force; read anew for every request. */
public interface ConfigSource {
  /** The agent sandbox configuration now in force. */
  SandboxConfig sandbox();

  /** The instance egress policy now in force. */
  EgressPolicy egress();
}
