package dev.agentsandbox.runs;

import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import java.time.Duration;
import java.util.List;

/**
 * What a run of a request would create, without creating anything: the admitted settings, where it
 * would run and the backend's manifests. The environment is left out: it may hold secrets.
 *
 * @param agent the agent's name
 * @param enabled whether the agent is enabled
 * @param agentConfigured whether the agent has a configuration of its own
 * @param backend the chosen backend
 * @param runtime the runtime the backend would use
 * @param isolation how strongly that runtime isolates the workload
 * @param available whether the backend can run it now
 * @param probeDetail what the backend's probe found
 * @param stillProbing the backends {@code auto} passed over because their first probe was still
 *     running (a control plane that just started)
 * @param image the workload's image
 * @param command the command, as the request gave it
 * @param egress the egress policy the run's proxy would enforce
 * @param resources the workload's caps
 * @param ttl the run's deadline, counted from launch
 * @param requireRuntimeClass whether the run refuses to start without gVisor or stronger
 * @param manifests what the backend would create
 */
public record PlanView(
    String agent,
    boolean enabled,
    boolean agentConfigured,
    String backend,
    String runtime,
    Isolation isolation,
    boolean available,
    String probeDetail,
    List<String> stillProbing,
    String image,
    List<String> command,
    RunEgress egress,
    Resources resources,
    Duration ttl,
    boolean requireRuntimeClass,
    List<Manifest> manifests) {

  public PlanView {
    stillProbing = List.copyOf(stillProbing);
    command = List.copyOf(command);
    manifests = List.copyOf(manifests);
  }
}
