package dev.agentsandbox.cli.drill;

import dev.agentsandbox.policy.event.EventType;
import java.util.List;

/**
 * The drill's hostile steps, in the order the transcript lists them; docs/runs.md describes them.
 * Each step is a script ({@link DrillScript}: tries to break one layer, prints what happened as
 * {@code drill: key=value} lines) and the judgement of each layer's refusal from what was observed,
 * kept here in Java: {@link EgressSteps} (the network and the proxy), {@link PeerSandboxStep}
 * (another live sandbox), {@link ContainmentSteps} (secrets, privileges, limits, the deadline),
 * over the checks they share ({@link Judgements}).
 *
 * <p>A judgement fails closed: a marker that is missing, a row that is absent or a value that does
 * not parse counts as not held.
 */
final class DrillSteps {
  static final String DENY = EventType.EGRESS_DENY.wireName();
  static final String TIMEOUT = EventType.TIMEOUT.wireName();
  static final String TEARDOWN = EventType.TEARDOWN.wireName();
  static final String REFUSED = EventType.REFUSED.wireName();

  private DrillSteps() {}

  /** Every step, in the order the transcript lists them. */
  static List<DrillStep> all(DrillSetup setup) {
    return List.of(
        EgressSteps.unlistedHost(setup),
        EgressSteps.directConnect(setup),
        EgressSteps.proxyOverridden(setup),
        EgressSteps.proxyEnvThroughApi(setup),
        EgressSteps.metadata(setup),
        EgressSteps.hostAndGateway(setup),
        PeerSandboxStep.anotherSandbox(setup),
        EgressSteps.dns(setup),
        ContainmentSteps.secrets(setup),
        ContainmentSteps.escalation(setup),
        ContainmentSteps.forkBomb(setup),
        ContainmentSteps.memory(setup),
        ContainmentSteps.runForever(setup));
  }

  static DrillStep byName(DrillSetup setup, String name) {
    return all(setup).stream()
        .filter(s -> s.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no drill step is named " + name));
  }
}
