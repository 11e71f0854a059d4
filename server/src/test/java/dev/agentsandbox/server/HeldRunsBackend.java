package dev.agentsandbox.server;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.SandboxPlan;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A real implementation of the backend SPI that runs nothing: a run whose command is {@code
 * ["hold"]} reports one refused connection and stays live until it is killed or torn down (at most
 * a minute); any other run writes one line, reports one refused connection and exits 0 at once. For
 * API tests that need live and ended runs without a daemon. Its sessions, when it is given a
 * backend of sessions, are that backend's (local processes: a test backend).
 */
final class HeldRunsBackend implements SandboxBackend {
  private final Map<String, CountDownLatch> held = new ConcurrentHashMap<>();
  private final java.util.Optional<SandboxBackend> sessions;

  /** A backend of one-shot runs only. */
  HeldRunsBackend() {
    this.sessions = java.util.Optional.empty();
  }

  /** A backend whose sessions {@code sessions} opens. */
  HeldRunsBackend(SandboxBackend sessions) {
    this.sessions = java.util.Optional.of(sessions);
  }

  @Override
  public boolean opensSessions() {
    return sessions.isPresent();
  }

  @Override
  public dev.agentsandbox.backend.session.SessionSandbox openSession(
      RunSpec spec, SandboxListener listener) {
    return sessions
        .orElseThrow(() -> new UnsupportedOperationException("held runs open no sessions"))
        .openSession(spec, listener);
  }

  @Override
  public String name() {
    return "docker";
  }

  @Override
  public Probe probe() {
    return new Probe("docker", true, Isolation.CONTAINER, "runc", "runs nothing (a test backend)");
  }

  @Override
  public SandboxPlan plan(RunSpec spec) {
    return new SandboxPlan(
        "docker",
        "runc",
        Isolation.CONTAINER,
        List.of(new Manifest("held", spec.runId(), Map.of())));
  }

  /** Whether run {@code runId} was launched and is still held. */
  boolean holds(String runId) {
    CountDownLatch latch = held.get(runId);
    return latch != null && latch.getCount() > 0;
  }

  @Override
  public Sandbox launch(RunSpec spec, SandboxListener listener) {
    boolean hold = spec.command().equals(List.of("hold"));
    CountDownLatch release = new CountDownLatch(hold ? 1 : 0);
    held.put(spec.runId(), release);
    listener.onOutput(
        ("ran " + String.join(" ", spec.command()) + "\n").getBytes(StandardCharsets.UTF_8));
    // One refusal of the run's proxy, so that its egress row is on the run's audit too.
    // A whole decision line as the proxy writes it (DecisionRecord reads every field it always
    // has).
    listener.onEgressDecision(
        "{\"time\":\"2026-12-01T00:00:00Z\",\"run_id\":\""
            + spec.runId()
            + "\",\"client\":\"10.0.0.2:40000\",\"method\":\"CONNECT\","
            + "\"host\":\"denied.example\",\"port\":443,\"decision\":\"deny\","
            + "\"reason\":\"not-allowed\",\"bytes_up\":0,\"bytes_down\":0,"
            + "\"duration_ms\":0,\"first\":false}");
    return new Sandbox() {
      @Override
      public String runId() {
        return spec.runId();
      }

      @Override
      public String runtime() {
        return "runc";
      }

      @Override
      public Completion await(Instant deadline) throws InterruptedException {
        boolean released = release.await(60, TimeUnit.SECONDS);
        return released
            ? new Completion(Completion.End.EXIT, OptionalInt.of(0), "exited")
            : new Completion(Completion.End.DEADLINE, OptionalInt.empty(), "held a minute");
      }

      @Override
      public void kill() {
        release.countDown();
      }

      @Override
      public void teardown() {
        release.countDown();
      }
    };
  }

  @Override
  public ReapReport reap(Instant now, Predicate<String> isLive) {
    return new ReapReport(List.of(), List.of());
  }
}
