package dev.agentsandbox.runs.local;

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
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * A backend for tests whose sandboxes are {@link LocalSessionSandbox}es: a session's steps, and a
 * one-shot run's command, are local processes in a private temporary folder. It is not a sandbox
 * (no isolation, no fence: the test's own commands only); it keeps what it created in a set the
 * reaper works from, as a real backend's labels are, so tests can leave things behind and see them
 * reaped. Thread-safe.
 */
public final class LocalSessionBackend implements SandboxBackend {
  private final String name;
  private final Path root;
  private final Clock clock;
  private final Map<String, LocalSessionSandbox> sessions = new ConcurrentHashMap<>();
  private final Map<String, Instant> resources = new ConcurrentHashMap<>();
  private volatile boolean openFails;

  /**
   * @param name the backend's name as configured ({@code docker}, to stand in for one)
   * @param root where each sandbox gets its folder
   */
  public LocalSessionBackend(String name, Path root, Clock clock) {
    this.name = name;
    this.root = root;
    this.clock = clock;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public boolean deliversCredentials() {
    return true;
  }

  @Override
  public boolean opensSessions() {
    return true;
  }

  @Override
  public Probe probe() {
    return new Probe(name, true, Isolation.CONTAINER, "local", "local processes (a test backend)");
  }

  @Override
  public SandboxPlan plan(RunSpec spec) {
    return new SandboxPlan(
        name,
        "local",
        Isolation.CONTAINER,
        List.of(new Manifest("local-folder", spec.runId(), Map.of())));
  }

  /** Makes every open from now on fail (or succeed again), as a daemon that refuses would. */
  public void openFails(boolean fails) {
    this.openFails = fails;
  }

  /** The live sandbox of a run, for tests that inject decisions or failures. */
  public LocalSessionSandbox sandbox(String runId) {
    LocalSessionSandbox sandbox = sessions.get(runId);
    if (sandbox == null) {
      throw new IllegalStateException("no local sandbox for run " + runId);
    }
    return sandbox;
  }

  /** Run ids whose resources exist now. */
  public Set<String> resources() {
    return new TreeSet<>(resources.keySet());
  }

  /** Resources of a run a dead control plane left, for the reaper to find. */
  public void leave(String runId, Instant expiresAt) {
    resources.put(runId, expiresAt);
  }

  @Override
  public SessionSandbox openSession(RunSpec spec, SandboxListener listener) {
    if (openFails) {
      throw new UnableToLaunchSandboxException(
          "creating the session sandbox of run " + spec.runId() + ": the test made it fail");
    }
    return open(spec, listener);
  }

  private LocalSessionSandbox open(RunSpec spec, SandboxListener listener) {
    Path folder;
    try {
      Files.createDirectories(root);
      folder = Files.createTempDirectory(root, spec.runId() + "-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    resources.put(spec.runId(), spec.expiresAt());
    LocalSessionSandbox sandbox =
        new LocalSessionSandbox(
            spec, listener, folder, clock, "local", () -> tornDown(spec.runId()));
    sessions.put(spec.runId(), sandbox);
    return sandbox;
  }

  /** Forgets a run's resources once its sandbox is torn down. */
  void tornDown(String runId) {
    resources.remove(runId);
    sessions.remove(runId);
  }

  @Override
  public Sandbox launch(RunSpec spec, SandboxListener listener) {
    LocalSessionSandbox session = open(spec, listener);
    Step step =
        session.exec(
            new StepSpec(1, spec.command(), Map.of(), WorkspacePath.root(), new byte[0]),
            new StepListener() {
              @Override
              public void onOutput(byte[] chunk) {
                listener.onOutput(chunk);
              }

              @Override
              public void onErrorOutput(byte[] chunk) {
                listener.onErrorOutput(chunk);
              }
            });
    return new Sandbox() {
      @Override
      public String runId() {
        return spec.runId();
      }

      @Override
      public String runtime() {
        return "local";
      }

      @Override
      public Completion await(Instant deadline) throws InterruptedException {
        Optional<StepEnd> end = step.awaitEnd(deadline);
        if (end.isEmpty()) {
          step.kill();
          return new Completion(
              Completion.End.DEADLINE, OptionalInt.of(137), "killed at the deadline");
        }
        return new Completion(
            end.get().end() == StepEnd.End.KILLED ? Completion.End.KILLED : Completion.End.EXIT,
            end.get().exitStatus(),
            end.get().detail());
      }

      @Override
      public Optional<InputStream> outputs() {
        return session.outputs();
      }

      @Override
      public void kill() {
        step.kill();
      }

      @Override
      public void teardown() {
        session.teardown();
      }
    };
  }

  @Override
  public ReapReport reap(Instant now, Predicate<String> isLive) {
    List<String> removed = new ArrayList<>();
    for (String runId : resources()) {
      Instant expiry = resources.get(runId);
      if ((expiry != null && expiry.isBefore(now)) || !isLive.test(runId)) {
        LocalSessionSandbox sandbox = sessions.remove(runId);
        if (sandbox != null) {
          sandbox.teardown();
        }
        resources.remove(runId);
        removed.add(runId);
      }
    }
    return new ReapReport(removed, List.of());
  }
}
