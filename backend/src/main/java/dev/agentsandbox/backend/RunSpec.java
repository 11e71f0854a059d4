package dev.agentsandbox.backend;

import dev.agentsandbox.policy.config.Injection;
import dev.agentsandbox.policy.config.OutputLimits;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Everything a backend needs to create one run's sandbox. Built by the run service after the
 * configuration, the governance checks and the environment screening have passed; backends trust it
 * and add nothing to it (in particular no credential of the platform's own).
 *
 * @param runId the run's id: lower-case letters and digits, at most 32 characters, so it fits in
 *     resource names and label values of every backend
 * @param agent the agent's name
 * @param image the workload's container image
 * @param command the command to run, as an argument vector
 * @param env environment variables for the workload, already screened against keys that would undo
 *     the fence
 * @param egress the policy the run's proxy enforces
 * @param resources caps for the workload
 * @param ttl the run's deadline, counted from launch
 * @param expiresAt the time after which the reaper deletes whatever the run left behind
 * @param requireRuntimeClass refuse to launch unless the workload runs under gVisor or stronger
 * @param runLabels the labels the run request carried (owner, task reference, ...), valid as
 *     Kubernetes label keys and values and never one of {@link Labels}' own keys; applied to every
 *     object the backend creates, beside {@link Labels#forRun}
 * @param credentials the credentials minted for this run, delivered as {@link RunCredential} says
 * @param outputs the agent's caps on the run's kept outputs: what the run service keeps of {@link
 *     RunContract#OUT_DIR}, and so how much of it a backend reads at most (the cap plus room for
 *     tar headers; the folder's archive is the workload's, and its size is not the workspace's)
 */
public record RunSpec(
    String runId,
    String agent,
    String image,
    List<String> command,
    Map<String, String> env,
    RunEgress egress,
    Resources resources,
    Duration ttl,
    Instant expiresAt,
    boolean requireRuntimeClass,
    Map<String, String> runLabels,
    List<RunCredential> credentials,
    OutputLimits outputs) {
  private static final Pattern RUN_ID = Pattern.compile("[a-z0-9]{1,32}");
  private static final Pattern AGENT = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");

  public RunSpec {
    Objects.requireNonNull(runId, "runId");
    if (!RUN_ID.matcher(runId).matches()) {
      throw new IllegalArgumentException("run id must be 1-32 lower-case letters or digits");
    }
    Objects.requireNonNull(agent, "agent");
    if (!AGENT.matcher(agent).matches()) {
      throw new IllegalArgumentException("agent name must be a DNS label");
    }
    Objects.requireNonNull(image, "image");
    command = List.copyOf(command);
    if (command.isEmpty()) {
      throw new IllegalArgumentException("command is empty");
    }
    env = Map.copyOf(env);
    Objects.requireNonNull(egress, "egress");
    Objects.requireNonNull(resources, "resources");
    Objects.requireNonNull(ttl, "ttl");
    if (ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException("ttl must be positive");
    }
    Objects.requireNonNull(expiresAt, "expiresAt");
    runLabels = Map.copyOf(runLabels);
    for (String key : runLabels.keySet()) {
      if (Labels.isReserved(key)) {
        throw new IllegalArgumentException("run label " + key + " is one of the sandbox's own");
      }
    }
    credentials = List.copyOf(credentials);
    Objects.requireNonNull(outputs, "outputs");
  }

  /** A run with the default output caps ({@link OutputLimits#DEFAULT}). */
  public RunSpec(
      String runId,
      String agent,
      String image,
      List<String> command,
      Map<String, String> env,
      RunEgress egress,
      Resources resources,
      Duration ttl,
      Instant expiresAt,
      boolean requireRuntimeClass,
      Map<String, String> runLabels,
      List<RunCredential> credentials) {
    this(
        runId,
        agent,
        image,
        command,
        env,
        egress,
        resources,
        ttl,
        expiresAt,
        requireRuntimeClass,
        runLabels,
        credentials,
        OutputLimits.DEFAULT);
  }

  /** A run without labels or credentials. */
  public RunSpec(
      String runId,
      String agent,
      String image,
      List<String> command,
      Map<String, String> env,
      RunEgress egress,
      Resources resources,
      Duration ttl,
      Instant expiresAt,
      boolean requireRuntimeClass) {
    this(
        runId,
        agent,
        image,
        command,
        env,
        egress,
        resources,
        ttl,
        expiresAt,
        requireRuntimeClass,
        Map.of(),
        List.of());
  }

  /** This spec with the credentials minted for it. */
  public RunSpec withCredentials(List<RunCredential> minted) {
    return new RunSpec(
        runId,
        agent,
        image,
        command,
        env,
        egress,
        resources,
        ttl,
        expiresAt,
        requireRuntimeClass,
        runLabels,
        minted,
        outputs);
  }

  /** This spec with the agent's output caps. */
  public RunSpec withOutputs(OutputLimits caps) {
    return new RunSpec(
        runId,
        agent,
        image,
        command,
        env,
        egress,
        resources,
        ttl,
        expiresAt,
        requireRuntimeClass,
        runLabels,
        credentials,
        caps);
  }

  /**
   * The credentials as the workload gets them: every one the agent names, but those the proxy
   * injects ({@link RunEgress#proxyHeldCredentials()}) hold {@link Injection#PLACEHOLDER} instead
   * of their value, so that the sandbox never holds them (docs/runs.md, "Inspected hosts").
   */
  public List<RunCredential> workloadCredentials() {
    java.util.Set<String> held = egress.proxyHeldCredentials();
    return credentials.stream()
        .map(
            c ->
                held.contains(c.name())
                    ? new RunCredential(c.name(), Injection.PLACEHOLDER, c.env(), c.expiresAt())
                    : c)
        .toList();
  }

  /**
   * The credentials the run's proxy injects, with their values: what a backend writes into the
   * proxy's own credentials folder ({@link dev.agentsandbox.policy.config.InspectPolicy}), never
   * into the sandbox.
   */
  public List<RunCredential> proxyCredentials() {
    java.util.Set<String> held = egress.proxyHeldCredentials();
    return credentials.stream().filter(c -> held.contains(c.name())).toList();
  }

  /**
   * The labels every resource of this run carries: the run's own labels and the sandbox's (the
   * reaper works from the latter alone).
   */
  public Map<String, String> labels() {
    Map<String, String> all = new java.util.HashMap<>(runLabels);
    all.putAll(Labels.forRun(runId, agent, expiresAt));
    return Map.copyOf(all);
  }
}
