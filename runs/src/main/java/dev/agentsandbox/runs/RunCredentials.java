package dev.agentsandbox.runs;

import dev.agentsandbox.credentials.IssuedCredential;
import dev.agentsandbox.credentials.RunIdentity;
import dev.agentsandbox.policy.config.CredentialSpec;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The credentials minted for one run, held until they are revoked when its workload stops.
 *
 * @param specs the agent's credential configuration they were minted from
 * @param identity who they were minted for
 * @param minted each credential, with its value
 */
record RunCredentials(
    Map<String, CredentialSpec> specs, RunIdentity identity, List<IssuedCredential> minted) {
  RunCredentials {
    specs = Map.copyOf(specs);
    Objects.requireNonNull(identity, "identity");
    minted = List.copyOf(minted);
  }
}
