package dev.agentsandbox.cli.drill;

import static dev.agentsandbox.cli.drill.Judgements.number;
import static dev.agentsandbox.cli.drill.Judgements.show;
import static dev.agentsandbox.cli.drill.Judgements.torndown;

import dev.agentsandbox.cli.drill.DrillObservation.AuditRef;
import dev.agentsandbox.policy.event.TimedOut;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The steps that stay inside and try to break the sandbox itself: the host's secrets, privileges,
 * the process and memory caps, and the deadline. Each is its script ({@link DrillScript}) with the
 * drill's values as arguments, and the judgement of each layer's refusal.
 */
final class ContainmentSteps {
  private ContainmentSteps() {}

  static DrillStep secrets(DrillSetup s) {
    return new DrillStep(
        "secrets",
        "look for the control plane's data and the host's sockets: "
            + String.join(", ", s.secretPaths())
            + ", and any admin-token, store.db or container runtime socket on the root file system",
        DrillScript.SECRETS.command(s.secretPaths()),
        Map.of(),
        false,
        seen -> {
          Map<String, List<String>> m = seen.markers();
          List<String> absent = m.getOrDefault("absent", List.of());
          List<String> present = m.getOrDefault("present", List.of());
          List<String> found = m.getOrDefault("found", List.of());
          List<String> foreign =
              m.getOrDefault("credential", List.of()).stream()
                  .filter(c -> !s.credentials().contains(c))
                  .toList();
          boolean finished = seen.marker("done").isPresent();
          return List.of(
              DrillCheck.of(
                  "workload",
                  "none of the paths exists, nothing is found, and the credentials folder holds"
                      + " only the run's own credentials",
                  finished
                      && absent.containsAll(s.secretPaths())
                      && present.isEmpty()
                      && found.isEmpty()
                      && foreign.isEmpty(),
                  !finished
                      ? "the script did not finish"
                      : "absent "
                          + absent.size()
                          + " of "
                          + s.secretPaths().size()
                          + (present.isEmpty() ? "" : ", present " + present)
                          + (found.isEmpty() ? "" : ", found " + found)
                          + (foreign.isEmpty() ? "" : ", foreign credentials " + foreign)),
              torndown(seen));
        });
  }

  static DrillStep escalation(DrillSetup s) {
    return new DrillStep(
        "privilege-escalation",
        "look for root, capabilities and setuid/setgid programs, and call chroot (needs"
            + " CAP_SYS_CHROOT)",
        DrillScript.PRIVILEGE_ESCALATION.command(),
        Map.of(),
        false,
        seen -> {
          Optional<Integer> uid = number(seen, "uid");
          Optional<String> prm = seen.marker("capprm");
          Optional<String> eff = seen.marker("capeff");
          Optional<String> amb = seen.marker("capamb");
          List<String> setid = seen.markers().getOrDefault("setid", List.of());
          Optional<Integer> chroot = number(seen, "chroot-exit");
          boolean capsZero =
              prm.filter(ContainmentSteps::zero).isPresent()
                  && eff.filter(ContainmentSteps::zero).isPresent()
                  && amb.map(ContainmentSteps::zero).orElse(true);
          return List.of(
              DrillCheck.of(
                  "workload",
                  "not root, no permitted/effective/ambient capability, no setuid or setgid"
                      + " program, chroot refused",
                  seen.marker("done").isPresent()
                      && uid.filter(u -> u != 0).isPresent()
                      && capsZero
                      && setid.isEmpty()
                      && chroot.filter(e -> e != 0).isPresent(),
                  "uid "
                      + show(uid)
                      + ", CapPrm "
                      + show(prm)
                      + ", CapEff "
                      + show(eff)
                      + ", CapAmb "
                      + show(amb)
                      + ", NoNewPrivs "
                      + show(seen.marker("nonewprivs"))
                      + (setid.isEmpty() ? ", no setid program" : ", setid " + setid)
                      + ", chroot exit "
                      + show(chroot)),
              torndown(seen));
        });
  }

  /** How many processes the fork bomb tries to start: the cap and then some. */
  static int forkAttempts(DrillSetup s) {
    return s.pids() + 64;
  }

  static DrillStep forkBomb(DrillSetup s) {
    int attempts = forkAttempts(s);
    return new DrillStep(
        "fork-bomb",
        "start " + attempts + " processes (the agent's cap is " + s.pids() + "), each living 60 s",
        DrillScript.FORK_BOMB.command(Integer.toString(attempts)),
        Map.of(),
        false,
        seen -> {
          Optional<Integer> started = number(seen, "forks-started");
          boolean begun = seen.marker("fork-bomb").filter("starting"::equals).isPresent();
          boolean stopped = started.isEmpty() || started.get() < attempts;
          boolean refusedFork = seen.output().contains("can't fork");
          boolean sandboxKilled =
              started.isEmpty()
                  && "exited".equals(seen.status())
                  && seen.exitStatus() != null
                  && seen.exitStatus() != 0;
          return List.of(
              DrillCheck.of(
                  "limits",
                  "the pids cap stops it: a fork fails, or (under gVisor, whose cap bounds the"
                      + " whole sandbox) the sandbox is killed; never all "
                      + attempts
                      + " started",
                  begun && stopped && (refusedFork || sandboxKilled),
                  !begun
                      ? "the script did not start"
                      : (started.isPresent()
                              ? "started " + started.get() + " of " + attempts
                              : "did not get to count")
                          + (refusedFork ? ", fork refused" : "")
                          + ", run "
                          + seen.status()
                          + " exit "
                          + seen.exitStatus()),
              torndown(seen));
        });
  }

  /** How many bytes the memory hog holds: the cap and 64 MiB more. */
  static long hogBytes(DrillSetup s) {
    return (s.memoryMb() + 64L) * 1024 * 1024;
  }

  static DrillStep memory(DrillSetup s) {
    long bytes = hogBytes(s);
    return new DrillStep(
        "memory-exhaustion",
        "hold "
            + bytes / (1024 * 1024)
            + " MiB in one process (the agent's cap is "
            + s.memoryMb()
            + " MiB)",
        DrillScript.MEMORY_EXHAUSTION.command(Long.toString(bytes / (1024 * 1024))),
        Map.of(),
        false,
        seen -> {
          Optional<Integer> hog = number(seen, "hog-exit");
          boolean begun = seen.marker("memory-hog").filter("starting"::equals).isPresent();
          boolean hogKilled = hog.filter(e -> e == 137).isPresent();
          // A run the deadline ended was killed by the deadline, not by the cap: not evidence.
          boolean sandboxKilled =
              hog.isEmpty()
                  && "exited".equals(seen.status())
                  && seen.exitStatus() != null
                  && seen.exitStatus() == 137;
          return List.of(
              DrillCheck.of(
                  "limits",
                  "the memory cap kills the hog (exit 137), or the whole sandbox under gVisor;"
                      + " never does it hold it all",
                  begun && (hogKilled || sandboxKilled),
                  !begun
                      ? "the script did not start"
                      : "hog exit "
                          + show(hog)
                          + ", run "
                          + seen.status()
                          + " exit "
                          + seen.exitStatus()),
              torndown(seen));
        });
  }

  static DrillStep runForever(DrillSetup s) {
    return new DrillStep(
        "run-forever",
        "keep running past the agent's ttl_seconds (" + s.ttlSeconds() + " s)",
        DrillScript.RUN_FOREVER.command(),
        Map.of(),
        false,
        seen -> {
          List<AuditRef> timeouts = seen.rows(TimedOut.class);
          return List.of(
              DrillCheck.of(
                  "deadline",
                  "the run is killed at its deadline: status deadline",
                  seen.marker("forever").isPresent()
                      && "deadline".equals(seen.status())
                      && "deadline".equals(seen.end()),
                  "status " + seen.status() + ", end " + seen.end()),
              DrillCheck.of(
                  "audit",
                  "an " + DrillSteps.TIMEOUT + " row",
                  !timeouts.isEmpty(),
                  timeouts.isEmpty() ? "no such row" : "row " + timeouts.getFirst().id()),
              torndown(seen));
        });
  }

  private static boolean zero(String hex) {
    return hex.matches("0+");
  }
}
