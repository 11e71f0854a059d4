package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.ReapReport;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Removes what runs that are over left behind, found from the host alone so that it also cleans up
 * after a control plane that was killed mid-run: each run directory's record names the run, its
 * expiry and its slot; the VMM and the proxy are the processes whose command line names the run's
 * directory; the tap carries the run id in its alias. Never touches a tap, process or directory
 * that does not name a run.
 *
 * <p>It also removes what a probe left ({@link HostCheck#PROBE_DIR}): a probe directory whose
 * control plane (pid and start time, from the name) is gone, or older than the probe's hard limit,
 * loses the processes that name it and then itself. A probe's VMM dies with its control plane and
 * at its limit anyway ({@link HostChildren}); this removes what a host without those bounds (or a
 * control plane of an older version) left.
 */
final class MicroVmReaper {
  private final MicroVmBackend backend;

  MicroVmReaper(MicroVmBackend backend) {
    this.backend = backend;
  }

  /** The records of every run directory (unreadable ones are skipped). */
  List<RunRecord> records() {
    List<RunRecord> records = new ArrayList<>();
    Path runDir = backend.config().runDir();
    if (!Files.isDirectory(runDir)) {
      return records;
    }
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(runDir)) {
      for (Path dir : dirs) {
        try {
          records.add(RunRecord.read(dir));
        } catch (IOException e) {
          // A directory being created right now, or not ours: the next pass sees it whole.
        }
      }
    } catch (IOException e) {
      return records;
    }
    return records;
  }

  ReapReport reap(Instant now, Predicate<String> isLive) {
    Set<String> removed = new TreeSet<>();
    List<String> problems = new ArrayList<>(reapProbes(now));
    for (RunRecord record : records()) {
      if (record.expiry().isAfter(now) && isLive.test(record.runId())) {
        continue;
      }
      Path dir = backend.config().runDir().resolve(record.runId());
      List<String> failed = new ArrayList<>();
      failed.addAll(killProcessesNaming(dir));
      failed.addAll(backend.removeElements(record.fenceSlot()));
      failed.addAll(backend.removeTap(record.tap(), record.runId()));
      if (failed.isEmpty()) {
        try {
          GuestFiles.deleteTree(dir);
          removed.add(record.runId());
        } catch (RuntimeException e) {
          failed.add("run directory " + dir + ": " + e.getMessage());
        }
      }
      for (String problem : failed) {
        problems.add("removing the microVM of run " + record.runId() + ": " + problem);
      }
    }
    return new ReapReport(List.copyOf(removed), problems);
  }

  /** Removes the directories (and processes) of probes that are over; returns the problems. */
  List<String> reapProbes(Instant now) {
    List<String> problems = new ArrayList<>();
    Path runDir = backend.config().runDir();
    if (!Files.isDirectory(runDir)) {
      return problems;
    }
    List<Path> over = new ArrayList<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(runDir, "probe-*")) {
      for (Path dir : dirs) {
        if (probeIsOver(dir, now)) {
          over.add(dir);
        }
      }
    } catch (IOException e) {
      return List.of("removing leftover probes in " + runDir + ": " + e.getMessage());
    }
    for (Path dir : over) {
      List<String> failed = killProcessesNaming(dir);
      if (failed.isEmpty()) {
        try {
          GuestFiles.deleteTree(dir);
        } catch (RuntimeException e) {
          failed.add("probe directory " + dir + ": " + e.getMessage());
        }
      }
      failed.forEach(
          problem -> problems.add("removing the leftover probe " + dir + ": " + problem));
    }
    return problems;
  }

  /** Whether the probe's control plane is gone, or the probe is past its hard limit. */
  static boolean probeIsOver(Path dir, Instant now) {
    java.util.regex.Matcher name = HostCheck.PROBE_DIR.matcher(dir.getFileName().toString());
    if (!name.matches()) {
      // A probe directory of an older version, named without its owner: over once past the limit.
      return olderThan(dir, now, HostCheck.PROBE_LIFETIME.multipliedBy(2));
    }
    long pid = Long.parseLong(name.group(1));
    long started = Long.parseLong(name.group(2));
    boolean ownerLives =
        ProcessHandle.of(pid)
            .flatMap(owner -> owner.info().startInstant())
            .map(start -> start.toEpochMilli() == started)
            .orElse(false);
    return !ownerLives || olderThan(dir, now, HostCheck.PROBE_LIFETIME.multipliedBy(2));
  }

  private static boolean olderThan(Path dir, Instant now, java.time.Duration age) {
    try {
      return Files.getLastModifiedTime(dir).toInstant().plus(age).isBefore(now);
    } catch (IOException e) {
      return false;
    }
  }

  /** Kills (SIGKILL) every process whose command line names the run's directory. */
  static List<String> killProcessesNaming(Path dir) {
    String needle = dir.toString() + "/";
    List<String> problems = new ArrayList<>();
    List<ProcessHandle> targets =
        ProcessHandle.allProcesses().filter(p -> commandLine(p.pid()).contains(needle)).toList();
    for (ProcessHandle process : targets) {
      process.destroyForcibly();
    }
    for (ProcessHandle process : targets) {
      try {
        process.onExit().get(10, java.util.concurrent.TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        problems.add("interrupted while waiting for pid " + process.pid());
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        problems.add("pid " + process.pid() + " did not exit after SIGKILL");
      }
    }
    return problems;
  }

  private static String commandLine(long pid) {
    try {
      byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline"));
      return new String(raw, StandardCharsets.UTF_8).replace('\0', ' ');
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }
}
