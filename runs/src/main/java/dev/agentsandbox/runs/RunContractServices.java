package dev.agentsandbox.runs;

import dev.agentsandbox.artifacts.ArtifactStore;
import dev.agentsandbox.artifacts.OutputCollector;
import dev.agentsandbox.store.Store;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What the run service needs beyond backends to honour the run contract: minting each run's
 * credentials, and keeping its outputs for review.
 *
 * @param credentials mints and revokes run credentials
 * @param artifacts where outputs are kept, with the collector that reads them; empty when the
 *     operator configured no artifact storage (each run's artifacts row then says so)
 */
public record RunContractServices(CredentialMinter credentials, Optional<Artifacts> artifacts) {
  public RunContractServices {
    Objects.requireNonNull(credentials, "credentials");
    Objects.requireNonNull(artifacts, "artifacts");
  }

  /**
   * An artifact store, its collector and how long artifacts are kept.
   *
   * @param store where outputs are kept
   * @param collector reads a sandbox's output archive into {@code store}
   * @param retention how long after a run ended its artifacts are kept; empty keeps them forever
   */
  public record Artifacts(
      ArtifactStore store, OutputCollector collector, Optional<java.time.Duration> retention) {
    public Artifacts {
      Objects.requireNonNull(store, "store");
      Objects.requireNonNull(collector, "collector");
      Objects.requireNonNull(retention, "retention");
      retention.ifPresent(
          keep -> {
            if (keep.isNegative() || keep.isZero()) {
              throw new IllegalArgumentException("artifact retention must be positive: " + keep);
            }
          });
    }

    /** A store with a collector spooling under {@code spool}, keeping artifacts forever. */
    public static Artifacts of(ArtifactStore store, Path spool) {
      return new Artifacts(store, new OutputCollector(store, spool), Optional.empty());
    }

    /** The same store, deleting a run's artifacts once it ended longer than {@code keep} ago. */
    public Artifacts keptFor(java.time.Duration keep) {
      return new Artifacts(store, collector, Optional.of(keep));
    }
  }

  /**
   * What the operator configured for the run contract on this control plane.
   *
   * @param artifacts where outputs are kept, if anywhere
   * @param jwt the JWT issuer, when signing keys are configured
   * @param commands registered credential commands by name
   * @param revokers registered revoke commands, by the name of the credential command they revoke
   *     for
   */
  public record Config(
      Optional<Artifacts> artifacts,
      Optional<dev.agentsandbox.credentials.JwtIssuer> jwt,
      Map<String, dev.agentsandbox.credentials.CommandIssuer> commands,
      Map<String, dev.agentsandbox.credentials.CommandRevoker> revokers) {
    public Config {
      Objects.requireNonNull(artifacts, "artifacts");
      Objects.requireNonNull(jwt, "jwt");
      commands = Map.copyOf(commands);
      revokers = Map.copyOf(revokers);
      for (String name : revokers.keySet()) {
        if (!commands.containsKey(name)) {
          throw new IllegalArgumentException(
              "a revoke command is registered for " + name + ", which is no credential command");
        }
      }
    }

    /** Without revoke commands: command credentials live until their expiry. */
    public Config(
        Optional<Artifacts> artifacts,
        Optional<dev.agentsandbox.credentials.JwtIssuer> jwt,
        Map<String, dev.agentsandbox.credentials.CommandIssuer> commands) {
      this(artifacts, jwt, commands, Map.of());
    }

    /** No artifact storage, no JWT keys, no commands: run tokens only. */
    public static final Config NONE = new Config(Optional.empty(), Optional.empty(), Map.of());

    /** The services over {@code store}. */
    public RunContractServices services(Store store) {
      return new RunContractServices(
          new CredentialMinter(store.tokens(), jwt, commands, revokers), artifacts);
    }
  }
}
