package dev.agentsandbox.backend.microvm;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The host processes this backend starts (each run's VMM and proxy, the probe's VMM), bound so that
 * none outlives the control plane that started it, nor its own time limit, whatever happens to the
 * control plane: a {@code finally} that never runs (the JVM killed, or exiting while a probe waits)
 * used to leave QEMU spinning, re-parented to init, for ever (issue 26).
 *
 * <p>Two bounds, both kept by the kernel and coreutils, not by this JVM:
 *
 * <ul>
 *   <li><b>the parent's death</b>: the command runs under {@code setpriv --pdeathsig KILL}, so the
 *       kernel sends it SIGKILL when its parent ends. The inner {@code setpriv} that changes to the
 *       unprivileged uid sets it again ({@link #DIE_WITH_PARENT}), after the uid change, which
 *       clears it (prctl(2));
 *   <li><b>a hard time limit</b>: {@code timeout --signal=KILL} ends the command at its limit, and
 *       being its parent, takes it along when it is killed itself.
 * </ul>
 *
 * <p>Linux sends the parent-death signal when the <em>thread</em> that started the child ends, not
 * its process. So every such child is started from one platform thread that lives as long as the
 * JVM ({@link #start}): started from a request's virtual thread, a VMM would die whenever the
 * carrier thread under it retired.
 *
 * <p>Thread-safe.
 */
final class HostChildren {
  /** The inner {@code setpriv}'s options that make its command die with its parent. */
  static final List<String> DIE_WITH_PARENT = List.of("--pdeathsig", "KILL");

  private static final ExecutorService STARTER =
      Executors.newSingleThreadExecutor(
          task -> Thread.ofPlatform().daemon().name("asb-microvm-starter").unstarted(task));

  private HostChildren() {}

  /**
   * {@code command} bounded to its parent and to {@code limit}: {@code setpriv --pdeathsig KILL --
   * timeout --signal=KILL <limit>s COMMAND}. {@code command} should itself start with a {@code
   * setpriv} that has {@link #DIE_WITH_PARENT}, so that it dies with {@code timeout}.
   */
  static List<String> bounded(Duration limit, List<String> command) {
    List<String> bounded = new ArrayList<>();
    bounded.add("setpriv");
    bounded.addAll(DIE_WITH_PARENT);
    bounded.add("--");
    bounded.add("timeout");
    bounded.add("--signal=KILL");
    bounded.add(Math.max(1, limit.toSeconds()) + "s");
    bounded.addAll(command);
    return bounded;
  }

  /** Starts the process from the one thread that lives as long as this JVM. */
  static Process start(ProcessBuilder builder) throws IOException {
    Future<Process> started = STARTER.submit(builder::start);
    boolean interrupted = false;
    try {
      while (true) {
        try {
          // Not interruptible: a process that starts after its caller gave up would be lost.
          return started.get(1, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (TimeoutException e) {
          throw new IOException("starting " + builder.command().get(0) + ": no answer in 1 min");
        } catch (ExecutionException e) {
          if (e.getCause() instanceof IOException io) {
            throw io;
          }
          throw new IOException("starting " + builder.command().get(0) + ": " + e.getCause(), e);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** What the bounded command finally runs (QEMU, the proxy): its deepest descendant. */
  static ProcessHandle leaf(Process process) {
    ProcessHandle leaf = process.toHandle();
    for (int depth = 0; depth < 8; depth++) {
      List<ProcessHandle> children = leaf.children().toList();
      if (children.isEmpty()) {
        break;
      }
      leaf = children.get(0);
    }
    return leaf;
  }

  /**
   * Kills the process and everything under it (SIGKILL) and waits, up to {@code wait}, for all of
   * them to have exited; false if one had not.
   */
  static boolean kill(Process process, Duration wait) throws InterruptedException {
    List<ProcessHandle> all = new ArrayList<>(process.descendants().toList());
    all.sort(Comparator.comparingLong(ProcessHandle::pid).reversed());
    all.add(process.toHandle());
    for (ProcessHandle handle : all) {
      handle.destroyForcibly();
    }
    long until = System.nanoTime() + wait.toNanos();
    for (ProcessHandle handle : all) {
      long left = until - System.nanoTime();
      try {
        handle.onExit().get(Math.max(0, left), TimeUnit.NANOSECONDS);
      } catch (ExecutionException | TimeoutException e) {
        return false;
      }
    }
    return true;
  }
}
