package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Completion.End;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxException;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.UnableToTearDownSandboxException;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.DeletionPropagation;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.api.model.batch.v1.JobCondition;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.LogWatch;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One run's namespace: watches the agent's Job to its end or the deadline, then hands the agent's
 * output tail and the proxy's decisions to the listener and reads the run's outputs from the
 * {@value SandboxPods#COLLECT} sidecar's log ({@link OutputFrame}). Teardown deletes the namespace,
 * which takes everything in it along.
 */
final class KubernetesSandbox implements Sandbox {
  /**
   * How long the sidecar's stream is followed at most: the agent pod's grace, in which the agent's
   * container is stopped and the sidecar writes, and time to read the stream.
   */
  static final Duration COLLECT_TIMEOUT =
      Duration.ofSeconds(SandboxPods.AGENT_POD_GRACE_SECONDS + 40);

  private final KubernetesClient client;
  private final KubernetesBackendConfig config;
  private final Clock clock;
  private final String runId;
  private final String namespace;
  private final String runtime;
  private final SandboxListener listener;
  private final boolean session;
  private final ProxyDecisions decisions;
  private final CountDownLatch killRequested = new CountDownLatch(1);
  // Why the backend stopped the sandbox as failed (a session's channel lost or broken), if it did.
  private volatile String failure;
  private final AtomicBoolean awaiting = new AtomicBoolean();
  private final AtomicBoolean collected = new AtomicBoolean();
  private final AtomicBoolean tornDown = new AtomicBoolean();
  private boolean outputsRead;
  // The read kill() started in the background; outputs() waits for it rather than racing it to
  // the lock with a follow of its own, which would find the pod already gone.
  private volatile Thread backgroundRead;
  private volatile Path outputsTar;
  private volatile String outputsProblem;

  KubernetesSandbox(
      KubernetesClient client,
      KubernetesBackendConfig config,
      Clock clock,
      String runId,
      String runtime,
      SandboxListener listener,
      boolean session) {
    this.client = client;
    this.config = config;
    this.clock = clock;
    this.runId = runId;
    this.namespace = BundleFactory.namespaceOf(runId);
    this.runtime = runtime;
    this.listener = listener;
    this.session = session;
    this.decisions = new ProxyDecisions(client, namespace, listener);
  }

  /** The run's proxy decisions; a session follows them as they come. */
  ProxyDecisions decisions() {
    return decisions;
  }

  @Override
  public String runId() {
    return runId;
  }

  @Override
  public String runtime() {
    return runtime;
  }

  @Override
  public Completion await(Instant deadline) throws InterruptedException {
    awaiting.set(true);
    try {
      while (true) {
        if (killRequested.getCount() == 0) {
          String failed = failure;
          return failed != null
              ? stop(End.ERROR, failed)
              : stop(End.KILLED, "killed by an operator");
        }
        Job job;
        try {
          job = client.batch().v1().jobs().inNamespace(namespace).withName(BundleFactory.JOB).get();
        } catch (KubernetesClientException e) {
          return new Completion(
              End.ERROR, OptionalInt.empty(), "reading Job " + jobRef() + ": " + Messages.of(e));
        }
        if (job == null) {
          return new Completion(
              End.ERROR,
              OptionalInt.empty(),
              "Job " + jobRef() + " disappeared before it finished (deleted outside the backend?)");
        }
        Optional<JobCondition> finished = finishedCondition(job);
        if (finished.isPresent()) {
          return finish(finished.get());
        }
        Duration left = Duration.between(clock.instant(), deadline);
        if (left.isNegative() || left.isZero()) {
          return stop(End.DEADLINE, "deadline " + deadline + " passed; the Job was deleted");
        }
        long waitMillis = Math.max(1, Math.min(config.pollInterval().toMillis(), left.toMillis()));
        killRequested.await(waitMillis, TimeUnit.MILLISECONDS);
      }
    } finally {
      awaiting.set(false);
    }
  }

  /**
   * Stops the sandbox as failed: {@link #await} then ends {@code ERROR} with {@code why} (a session
   * whose channel to its runner was lost or broke the protocol), outputs collected as on a kill.
   * The first reason given is kept.
   */
  void fail(String why) {
    synchronized (this) {
      if (failure == null && killRequested.getCount() > 0) {
        failure = why;
      }
    }
    kill();
  }

  @Override
  public void kill() {
    killRequested.countDown();
    if (!awaiting.get()) {
      // Nobody is waiting to collect the output first, so stop the workload right away, following
      // the sidecar's log from before, and read its stream in the background (outputs() waits).
      Follow stream = followCollect();
      try {
        deleteJob();
      } finally {
        backgroundRead = Thread.ofVirtual().start(() -> readOutputs(stream));
      }
    }
  }

  @Override
  public void teardown() {
    if (!tornDown.compareAndSet(false, true)) {
      return;
    }
    deleteOutputsTar();
    try {
      client.namespaces().withName(namespace).delete();
    } catch (KubernetesClientException e) {
      if (e.getCode() != 404) {
        tornDown.set(false);
        throw new UnableToTearDownSandboxException(
            "deleting namespace "
                + namespace
                + " of run "
                + runId
                + ": "
                + Messages.of(e)
                + " (the reaper retries; kubectl delete namespace "
                + namespace
                + ")",
            e);
      }
    }
  }

  private Completion finish(JobCondition condition) {
    Optional<String> mismatch = runtimeMismatch();
    if (mismatch.isPresent()) {
      collect();
      readOutputs(followCollect());
      return new Completion(
          End.RUNTIME_MISMATCH,
          OptionalInt.empty(),
          "the "
              + SandboxPods.RUNTIME_CHECK
              + " init container found that the agent's pod does not run under gVisor, so the"
              + " agent's command never ran: "
              + mismatch.get()
              + " (check RuntimeClass handlers and runsc on node "
              + nodeOfAgent().orElse("unknown")
              + "; docs/backends/k8s.md)");
    }
    OptionalInt exit = exitStatus();
    collect();
    readOutputs(followCollect());
    if ("Complete".equals(condition.getType())) {
      return new Completion(End.EXIT, exit.isPresent() ? exit : OptionalInt.of(0), "Job complete");
    }
    if ("DeadlineExceeded".equals(condition.getReason())) {
      return new Completion(
          End.DEADLINE, exit, "Job exceeded activeDeadlineSeconds; Kubernetes stopped it");
    }
    if (exit.isPresent()) {
      return new Completion(End.EXIT, exit, "Job failed: the agent exited with " + exit.getAsInt());
    }
    return new Completion(
        End.ERROR,
        exit,
        "Job failed: " + condition.getReason() + ": " + String.valueOf(condition.getMessage()));
  }

  /**
   * Collects the workload's log, then stops it by deleting its Job: the garbage collector deletes
   * the pod with its grace ({@link SandboxPods#AGENT_POD_GRACE_SECONDS}), the kubelet stops the
   * agent's container and then the sidecar, which writes the outputs' stream. The sidecar's log is
   * followed from before the deletion, so the stream is read while the pod terminates.
   */
  private Completion stop(End end, String detail) {
    OptionalInt exit = exitStatus();
    collect();
    Follow stream = followCollect();
    try {
      deleteJob();
    } catch (UnableToTearDownSandboxException e) {
      // The run is over either way; teardown deletes the namespace and the Job with it.
      readOutputs(stream);
      return new Completion(end, exit, detail + "; " + e.getMessage());
    }
    readOutputs(stream);
    return new Completion(end, exit, detail);
  }

  /**
   * The run's outputs as the sidecar streamed them (read at the end of {@link #await}; read now,
   * bounded by {@link #COLLECT_TIMEOUT}, when the run was killed without an await): a verified tar
   * whose top folder is {@code out}.
   *
   * @throws SandboxException when there is no verified stream, saying why
   */
  @Override
  public Optional<InputStream> outputs() {
    Thread started = backgroundRead;
    if (started != null) {
      try {
        // readOutputs is itself bounded by COLLECT_TIMEOUT; the margin covers its last write.
        started.join(COLLECT_TIMEOUT.plusSeconds(5));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new SandboxException(
            "collecting the outputs of run " + runId + ": interrupted while the read went on");
      }
    }
    boolean read;
    synchronized (this) {
      read = outputsRead;
    }
    if (!read) {
      readOutputs(followCollect());
    }
    Path tar;
    String problem;
    synchronized (this) {
      tar = outputsTar;
      problem = outputsProblem;
    }
    if (problem != null || tar == null) {
      throw new SandboxException(
          problem != null ? problem : "the outputs of run " + runId + " are gone");
    }
    try {
      return Optional.of(Files.newInputStream(tar));
    } catch (IOException e) {
      throw new SandboxException(
          "reading the collected outputs of run " + runId + ": " + e.getMessage(), e);
    }
  }

  /** The sidecar's followed log, or why it could not be followed. */
  private record Follow(LogWatch watch, String problem) {
    static Follow failed(String problem) {
      return new Follow(null, problem);
    }
  }

  /** Follows the sidecar's log (its container only, never the agent's), or says why not. */
  private Follow followCollect() {
    synchronized (this) {
      if (outputsRead) {
        return Follow.failed("already read");
      }
    }
    try {
      Optional<Pod> pod = agentPod();
      if (pod.isEmpty()) {
        return Follow.failed(
            "the agent's pod of run " + runId + " no longer exists or never started: no outputs");
      }
      return new Follow(
          client
              .pods()
              .inNamespace(namespace)
              .withName(pod.get().getMetadata().getName())
              .inContainer(SandboxPods.COLLECT)
              .watchLog(),
          null);
    } catch (RuntimeException e) {
      // KubernetesClientException mostly; whatever it is, the run still ends and says why.
      return Follow.failed(
          "following the "
              + SandboxPods.COLLECT
              + " sidecar's log of run "
              + runId
              + ": "
              + Messages.of(e));
    }
  }

  /**
   * Decodes the followed stream into a private temporary file, bounded in time ({@link
   * #COLLECT_TIMEOUT}: the log is closed then) and in size (the out volume's size plus room for
   * tar's headers). Once per sandbox.
   */
  private synchronized void readOutputs(Follow stream) {
    if (outputsRead) {
      if (stream.watch() != null) {
        stream.watch().close();
      }
      return;
    }
    outputsRead = true;
    if (stream.watch() == null) {
      outputsProblem = stream.problem();
      return;
    }
    LogWatch watch = stream.watch();
    AtomicBoolean timedOut = new AtomicBoolean();
    Thread timer =
        Thread.ofVirtual()
            .start(
                () -> {
                  try {
                    Thread.sleep(COLLECT_TIMEOUT);
                    timedOut.set(true);
                    watch.close();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                });
    Path tar = null;
    try {
      tar = Files.createTempFile("asb-" + runId + "-out", ".tar");
      long max = config.quota().ephemeralStorageMb() * 1024L * 1024L + MAX_TAR_OVERHEAD;
      OutputFrame.decode(
          new InputStreamReader(watch.getOutput(), StandardCharsets.US_ASCII), tar, max);
      outputsTar = tar;
      outputsProblem = null;
    } catch (OutputFrame.FrameException | IOException | RuntimeException e) {
      outputsProblem =
          "the "
              + SandboxPods.COLLECT
              + " sidecar's stream of run "
              + runId
              + " was refused: "
              + (e instanceof OutputFrame.FrameException ? e.getMessage() : Messages.of(e))
              + (timedOut.get()
                  ? " (not complete within " + COLLECT_TIMEOUT.toSeconds() + " s)"
                  : "");
      deleteQuietly(tar);
    } finally {
      timer.interrupt();
      watch.close();
    }
  }

  /** Room for tar's headers and padding beyond the out volume's own size. */
  private static final long MAX_TAR_OVERHEAD = 16L * 1024 * 1024;

  private void deleteOutputsTar() {
    deleteQuietly(outputsTar);
  }

  private static void deleteQuietly(Path file) {
    if (file == null) {
      return;
    }
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      // A temporary file in the JVM's temporary folder; nothing else refers to it.
    }
  }

  private void deleteJob() {
    try {
      client
          .batch()
          .v1()
          .jobs()
          .inNamespace(namespace)
          .withName(BundleFactory.JOB)
          .withPropagationPolicy(DeletionPropagation.BACKGROUND)
          .delete();
    } catch (KubernetesClientException e) {
      if (e.getCode() != 404) {
        throw new UnableToTearDownSandboxException(
            "deleting Job "
                + jobRef()
                + " of run "
                + runId
                + ": "
                + Messages.of(e)
                + " (teardown deletes the namespace anyway)",
            e);
      }
    }
  }

  private static Optional<JobCondition> finishedCondition(Job job) {
    if (job.getStatus() == null || job.getStatus().getConditions() == null) {
      return Optional.empty();
    }
    return job.getStatus().getConditions().stream()
        .filter(c -> "True".equals(c.getStatus()))
        .filter(c -> "Complete".equals(c.getType()) || "Failed".equals(c.getType()))
        .findFirst();
  }

  Optional<Pod> agentPod() {
    List<Pod> pods =
        client
            .pods()
            .inNamespace(namespace)
            .withLabels(BundleFactory.agentPodSelector(runId))
            .list()
            .getItems();
    return pods.stream().findFirst();
  }

  /**
   * What the runtime check said when it failed, or empty when it passed, did not run or is absent.
   */
  Optional<String> runtimeMismatch() {
    try {
      Optional<Pod> pod = agentPod();
      if (pod.isEmpty()
          || pod.get().getStatus() == null
          || pod.get().getStatus().getInitContainerStatuses() == null) {
        return Optional.empty();
      }
      return pod.get().getStatus().getInitContainerStatuses().stream()
          .filter(s -> SandboxPods.RUNTIME_CHECK.equals(s.getName()))
          .filter(s -> s.getState() != null && s.getState().getTerminated() != null)
          .map(s -> s.getState().getTerminated())
          .filter(t -> t.getExitCode() != null && t.getExitCode() != 0)
          .map(
              t ->
                  "exit status "
                      + t.getExitCode()
                      + (t.getMessage() == null || t.getMessage().isBlank()
                          ? ""
                          : ", " + Messages.of(new IllegalStateException(t.getMessage()))))
          .findFirst();
    } catch (KubernetesClientException e) {
      return Optional.empty();
    }
  }

  private Optional<String> nodeOfAgent() {
    try {
      return agentPod()
          .map(Pod::getSpec)
          .map(io.fabric8.kubernetes.api.model.PodSpec::getNodeName)
          .filter(n -> !n.isBlank());
    } catch (KubernetesClientException e) {
      return Optional.empty();
    }
  }

  private OptionalInt exitStatus() {
    try {
      Optional<Pod> pod = agentPod();
      if (pod.isEmpty() || pod.get().getStatus() == null) {
        return OptionalInt.empty();
      }
      List<ContainerStatus> statuses = pod.get().getStatus().getContainerStatuses();
      if (statuses == null) {
        return OptionalInt.empty();
      }
      return statuses.stream()
          .filter(s -> BundleFactory.AGENT_CONTAINER.equals(s.getName()))
          .filter(s -> s.getState() != null && s.getState().getTerminated() != null)
          .mapToInt(s -> s.getState().getTerminated().getExitCode())
          .findFirst();
    } catch (KubernetesClientException e) {
      return OptionalInt.empty();
    }
  }

  /** The agent's output tail and the proxy's decisions, delivered once per sandbox. */
  private void collect() {
    if (!collected.compareAndSet(false, true)) {
      return;
    }
    Optional<Pod> agent;
    try {
      agent = agentPod();
    } catch (KubernetesClientException e) {
      agent = Optional.empty();
    }
    if (!session) {
      // A session's agent container is the step runner: its steps' output came as frames, and its
      // own log (the runner's diagnostics) is not the workload's output.
      agent
          .flatMap(pod -> readLog(pod.getMetadata().getName(), BundleFactory.AGENT_CONTAINER, true))
          .filter(log -> !log.isEmpty())
          .ifPresent(log -> listener.onOutput(log.getBytes(StandardCharsets.UTF_8)));
    }
    decisions.finish();
  }

  Optional<String> readLog(String pod, String container, boolean tail) {
    try {
      var resource = client.pods().inNamespace(namespace).withName(pod).inContainer(container);
      String log =
          tail ? resource.tailingLines(config.outputTailLines()).getLog() : resource.getLog();
      return Optional.ofNullable(log);
    } catch (KubernetesClientException e) {
      // A pod that never started has no log; the completion still says how the run ended.
      return Optional.empty();
    }
  }

  private String jobRef() {
    return namespace + "/" + BundleFactory.JOB;
  }
}
