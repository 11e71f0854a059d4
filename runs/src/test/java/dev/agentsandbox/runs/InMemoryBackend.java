package dev.agentsandbox.runs;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.PreparedSandbox;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.backend.UnableToTearDownSandboxException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;

/**
 * A sandbox backend that runs nothing: each launch follows the {@link Script} the test set for the
 * run's first command argument, keeps the "resources" it created in a set (removed by teardown and
 * reap), and honours the SPI's contract — kill ends {@code await} with {@code KILLED}, the deadline
 * (on this backend's own clock) with {@code DEADLINE}, teardown is idempotent, a failed launch
 * leaves nothing. Thread-safe.
 */
class InMemoryBackend implements SandboxBackend {
  /** The proxy-pool standby id the next sandboxes say they were built on; null: none. */
  volatile String pooledProxy;

  /** How a scripted workload behaves. */
  enum Ending {
    /** Writes its output and decisions, then exits with the status. */
    EXIT,
    /** Writes its output and decisions, then runs until killed or its deadline passes. */
    RUN_UNTIL_STOPPED,
    /** The backend fails to create the sandbox. */
    FAIL_LAUNCH,
    /** The backend loses the workload while waiting for it. */
    FAIL_AWAIT,
    /** Ends before its command runs: the isolation it was launched for was not there. */
    RUNTIME_MISMATCH,
    /** Its proxy stops while it runs; the backend stops the workload. */
    PROXY_DIED
  }

  /**
   * What one run does.
   *
   * @param ending how it ends
   * @param exitStatus its exit status when it exits
   * @param output what it writes
   * @param decisions the proxy's decision lines
   * @param teardownFails whether deleting its resources fails (they stay, for the reaper)
   */
  record Script(
      Ending ending, int exitStatus, String output, List<String> decisions, boolean teardownFails) {
    Script {
      Objects.requireNonNull(ending, "ending");
      decisions = List.copyOf(decisions);
    }

    static Script exits(int status, String output) {
      return new Script(Ending.EXIT, status, output, List.of(), false);
    }

    static Script runsUntilStopped() {
      return new Script(Ending.RUN_UNTIL_STOPPED, 0, "", List.of(), false);
    }
  }

  private final String name;
  private final Isolation isolation;
  private final Clock clock;
  private final Map<String, Script> scripts = new ConcurrentHashMap<>();
  private final Set<String> resources = ConcurrentHashMap.newKeySet();
  private final Map<String, Instant> expiries = new ConcurrentHashMap<>();
  private final Map<String, Integer> teardowns = new ConcurrentHashMap<>();
  private final Map<String, CountDownLatch> started = new ConcurrentHashMap<>();
  private final Map<String, RunSpec> launched = new ConcurrentHashMap<>();
  private final Map<String, byte[]> outputArchives = new ConcurrentHashMap<>();
  private final Map<String, RunSpec> prepared = new ConcurrentHashMap<>();
  private final Map<String, Integer> handOvers = new ConcurrentHashMap<>();
  private final Map<String, dev.agentsandbox.runs.local.LocalSessionSandbox> sessions =
      new ConcurrentHashMap<>();
  private volatile boolean sessionOpenFails;
  private volatile boolean available = true;
  private volatile boolean prepareFails;
  private volatile CountDownLatch teardownGate = new CountDownLatch(0);

  InMemoryBackend(String name, Isolation isolation, Clock clock) {
    this.name = name;
    this.isolation = isolation;
    this.clock = clock;
  }

  /** Runs whose command starts with {@code program} follow {@code script}. */
  InMemoryBackend script(String program, Script script) {
    scripts.put(program, script);
    return this;
  }

  /** Runs whose command starts with {@code program} leave this tar as their output folder. */
  InMemoryBackend outputs(String program, byte[] tar) {
    outputArchives.put(program, tar.clone());
    return this;
  }

  /** The spec a run was launched with, credentials included. */
  RunSpec launched(String runId) {
    return launched.get(runId);
  }

  void available(boolean now) {
    this.available = now;
  }

  /** Run ids whose resources exist now. */
  Set<String> resources() {
    return new TreeSet<>(resources);
  }

  /** How many times a run's teardown was called. */
  int teardowns(String runId) {
    return teardowns.getOrDefault(runId, 0);
  }

  /**
   * Makes every teardown from now on wait (up to a minute) until {@link #openTeardowns()}, as a
   * slow daemon would; the run's resources exist while it waits.
   */
  void holdTeardowns() {
    teardownGate = new CountDownLatch(1);
  }

  /** Lets held teardowns go on. */
  void openTeardowns() {
    teardownGate.countDown();
  }

  /** Waits until the run's workload has started; false when it did not within {@code wait}. */
  boolean awaitStarted(String runId, Duration wait) throws InterruptedException {
    return started
        .computeIfAbsent(runId, id -> new CountDownLatch(1))
        .await(wait.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Resources left behind by a control plane that died, for the reaper to find. */
  void leave(String runId, Instant expiresAt) {
    resources.add(runId);
    expiries.put(runId, expiresAt);
  }

  @Override
  public String name() {
    return name;
  }

  /** Records the credentials it is given, as a delivering backend would hand them over. */
  @Override
  public boolean deliversCredentials() {
    return true;
  }

  @Override
  public Probe probe() {
    return available
        ? new Probe(name, true, isolation, isolation == Isolation.GVISOR ? "runsc" : "runc", "ok")
        : Probe.unavailable(name, "switched off by the test");
  }

  @Override
  public SandboxPlan plan(RunSpec spec) {
    return new SandboxPlan(
        name,
        probe().runtime(),
        isolation,
        List.of(
            new Manifest("memory-sandbox", "mem-" + spec.runId(), Map.of("image", spec.image()))));
  }

  /** The content id this backend gives an image: {@code sha256:} and the hash of its name. */
  static String imageIdOf(String image) {
    try {
      return "sha256:"
          + java.util.HexFormat.of()
              .formatHex(
                  java.security.MessageDigest.getInstance("SHA-256")
                      .digest(image.getBytes(StandardCharsets.UTF_8)));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public Sandbox launch(RunSpec spec, SandboxListener listener) {
    Script script = scripts.get(spec.command().get(0));
    if (script == null) {
      throw new UnableToLaunchSandboxException(
          "launching run " + spec.runId() + ": no script for " + spec.command().get(0));
    }
    if (script.ending() == Ending.FAIL_LAUNCH) {
      throw new UnableToLaunchSandboxException(
          "creating the sandbox of run " + spec.runId() + ": the scripted launch failed");
    }
    resources.add(spec.runId());
    expiries.put(spec.runId(), spec.expiresAt());
    launched.put(spec.runId(), spec);
    return new MemorySandbox(spec, script, listener);
  }

  /** Opens sessions as {@link dev.agentsandbox.runs.local.LocalSessionSandbox}es. */
  @Override
  public boolean opensSessions() {
    return true;
  }

  @Override
  public dev.agentsandbox.backend.session.SessionSandbox openSession(
      RunSpec spec, SandboxListener listener) {
    if (sessionOpenFails) {
      throw new UnableToLaunchSandboxException(
          "creating the session sandbox of run " + spec.runId() + ": the scripted open failed");
    }
    resources.add(spec.runId());
    expiries.put(spec.runId(), spec.expiresAt());
    launched.put(spec.runId(), spec);
    return localSession(spec, listener);
  }

  private dev.agentsandbox.runs.local.LocalSessionSandbox localSession(
      RunSpec spec, SandboxListener listener) {
    java.nio.file.Path folder;
    try {
      folder = java.nio.file.Files.createTempDirectory("asb-memory-session-" + spec.runId());
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    dev.agentsandbox.runs.local.LocalSessionSandbox session =
        new dev.agentsandbox.runs.local.LocalSessionSandbox(
            spec,
            listener,
            folder,
            clock,
            probe().runtime(),
            () -> {
              teardowns.merge(spec.runId(), 1, Integer::sum);
              resources.remove(spec.runId());
            });
    sessions.put(spec.runId(), session);
    return session;
  }

  /** The live session sandbox of a run, for tests that inject decisions or failures. */
  dev.agentsandbox.runs.local.LocalSessionSandbox session(String runId) {
    dev.agentsandbox.runs.local.LocalSessionSandbox session = sessions.get(runId);
    if (session == null) {
      throw new IllegalStateException("no session sandbox for run " + runId);
    }
    return session;
  }

  /** Makes every session open from now on fail (or succeed again). */
  void sessionOpenFails(boolean fails) {
    this.sessionOpenFails = fails;
  }

  /** Prepares warm sandboxes: "resources" under the prepared run id, a hand-over once. */
  @Override
  public boolean prepares() {
    return true;
  }

  @Override
  public PreparedSandbox prepare(RunSpec spec, Instant idleUntil) {
    if (prepareFails) {
      throw new UnableToLaunchSandboxException(
          "preparing a sandbox for agent " + spec.agent() + ": the scripted preparation failed");
    }
    resources.add(spec.runId());
    expiries.put(spec.runId(), spec.expiresAt());
    prepared.put(spec.runId(), spec);
    return new MemoryPrepared(spec);
  }

  /** Makes every preparation fail from now on (or succeed again). */
  void prepareFails(boolean fails) {
    this.prepareFails = fails;
  }

  /** The spec each sandbox was prepared from, by run id. */
  Map<String, RunSpec> prepared() {
    return Map.copyOf(prepared);
  }

  /** How many times the prepared sandbox of {@code runId} was handed over (attempts included). */
  int handOvers(String runId) {
    return handOvers.getOrDefault(runId, 0);
  }

  @Override
  public ReapReport reap(Instant now, Predicate<String> isLive) {
    List<String> removed = new ArrayList<>();
    for (String runId : resources()) {
      Instant expiry = expiries.get(runId);
      if ((expiry != null && expiry.isBefore(now)) || !isLive.test(runId)) {
        resources.remove(runId);
        removed.add(runId);
      }
    }
    return new ReapReport(removed, List.of());
  }

  private final class MemoryPrepared implements PreparedSandbox {
    private final RunSpec spec;
    private final AtomicBoolean used = new AtomicBoolean();

    MemoryPrepared(RunSpec spec) {
      this.spec = spec;
    }

    @Override
    public String runId() {
      return spec.runId();
    }

    @Override
    public Sandbox handOver(RunSpec run, SandboxListener listener) {
      handOvers.merge(spec.runId(), 1, Integer::sum);
      if (!used.compareAndSet(false, true)) {
        throw new IllegalStateException("warm sandbox " + spec.runId() + " was already used");
      }
      if (!run.runId().equals(spec.runId())
          || !run.egress().equals(spec.egress())
          || !run.image().equals(spec.image())) {
        resources.remove(spec.runId());
        throw new IllegalArgumentException("run " + run.runId() + " is not what was prepared");
      }
      Script script = scripts.get(run.command().get(0));
      if (script == null || script.ending() == Ending.FAIL_LAUNCH) {
        resources.remove(spec.runId());
        throw new UnableToLaunchSandboxException(
            "handing over run " + run.runId() + ": the scripted command could not start");
      }
      launched.put(run.runId(), run);
      return new MemorySandbox(run, script, listener);
    }

    @Override
    public dev.agentsandbox.backend.session.SessionSandbox handOverSession(
        RunSpec run, SandboxListener listener) {
      handOvers.merge(spec.runId(), 1, Integer::sum);
      if (!used.compareAndSet(false, true)) {
        throw new IllegalStateException("warm sandbox " + spec.runId() + " was already used");
      }
      if (!run.runId().equals(spec.runId())
          || !run.egress().equals(spec.egress())
          || !run.image().equals(spec.image())) {
        resources.remove(spec.runId());
        throw new IllegalArgumentException("run " + run.runId() + " is not what was prepared");
      }
      launched.put(run.runId(), run);
      return localSession(run, listener);
    }

    @Override
    public void discard() {
      if (used.compareAndSet(false, true)) {
        resources.remove(spec.runId());
      }
    }
  }

  private final class MemorySandbox implements Sandbox {
    private final RunSpec spec;
    private final Script script;
    private final SandboxListener listener;
    private final CountDownLatch killed = new CountDownLatch(1);

    MemorySandbox(RunSpec spec, Script script, SandboxListener listener) {
      this.spec = spec;
      this.script = script;
      this.listener = listener;
    }

    @Override
    public String runId() {
      return spec.runId();
    }

    @Override
    public String runtime() {
      return probe().runtime();
    }

    @Override
    public java.util.Optional<String> imageId() {
      return java.util.Optional.of(imageIdOf(spec.image()));
    }

    @Override
    public java.util.Optional<String> pooledProxy() {
      return java.util.Optional.ofNullable(pooledProxy);
    }

    @Override
    public Completion await(Instant deadline) throws InterruptedException {
      started.computeIfAbsent(spec.runId(), id -> new CountDownLatch(1)).countDown();
      if (!script.output().isEmpty()) {
        listener.onOutput(script.output().getBytes(StandardCharsets.UTF_8));
      }
      script.decisions().forEach(listener::onEgressDecision);
      switch (script.ending()) {
        case EXIT -> {
          return new Completion(
              Completion.End.EXIT, OptionalInt.of(script.exitStatus()), "exited by itself");
        }
        case RUNTIME_MISMATCH -> {
          return new Completion(
              Completion.End.RUNTIME_MISMATCH,
              OptionalInt.empty(),
              "the scripted pod was not under gVisor");
        }
        case PROXY_DIED -> {
          return new Completion(
              Completion.End.PROXY_DIED,
              OptionalInt.of(137),
              "the scripted proxy stopped while the workload ran");
        }
        case FAIL_AWAIT ->
            throw new IllegalStateException(
                "following run " + spec.runId() + ": the scripted workload was lost");
        default -> {
          long left = Math.max(0, Duration.between(clock.instant(), deadline).toMillis());
          if (killed.await(left, TimeUnit.MILLISECONDS)) {
            return new Completion(Completion.End.KILLED, OptionalInt.of(137), "killed");
          }
          killed.countDown();
          return new Completion(
              Completion.End.DEADLINE, OptionalInt.of(137), "killed at the deadline");
        }
      }
    }

    @Override
    public java.util.Optional<java.io.InputStream> outputs() {
      byte[] tar = outputArchives.get(spec.command().get(0));
      return tar == null
          ? java.util.Optional.empty()
          : java.util.Optional.of(new java.io.ByteArrayInputStream(tar));
    }

    @Override
    public void kill() {
      killed.countDown();
    }

    @Override
    public void teardown() {
      killed.countDown();
      try {
        if (!teardownGate.await(1, TimeUnit.MINUTES)) {
          throw new UnableToTearDownSandboxException(
              "deleting the sandbox of run " + spec.runId() + ": the held teardown timed out");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new UnableToTearDownSandboxException(
            "deleting the sandbox of run " + spec.runId() + ": interrupted");
      }
      teardowns.merge(spec.runId(), 1, Integer::sum);
      if (script.teardownFails()) {
        throw new UnableToTearDownSandboxException(
            "deleting the sandbox of run " + spec.runId() + ": the scripted teardown failed");
      }
      resources.remove(spec.runId());
    }
  }
}
