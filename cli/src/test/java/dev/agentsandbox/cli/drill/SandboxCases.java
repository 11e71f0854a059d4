package dev.agentsandbox.cli.drill;

import static dev.agentsandbox.cli.drill.DrillFixtures.ATTACK_HELD;
import static dev.agentsandbox.cli.drill.DrillFixtures.ESCALATION_HELD;
import static dev.agentsandbox.cli.drill.DrillFixtures.PEER_DENIED;
import static dev.agentsandbox.cli.drill.DrillFixtures.PEER_ROWS;
import static dev.agentsandbox.cli.drill.DrillFixtures.RUN;
import static dev.agentsandbox.cli.drill.DrillFixtures.SECRETS_HELD;
import static dev.agentsandbox.cli.drill.DrillFixtures.TARGET_HELD;
import static dev.agentsandbox.cli.drill.DrillFixtures.attack;
import static dev.agentsandbox.cli.drill.DrillFixtures.ran;
import static dev.agentsandbox.cli.drill.DrillFixtures.row;
import static dev.agentsandbox.cli.drill.DrillFixtures.target;
import static dev.agentsandbox.cli.drill.DrillFixtures.withTeardown;

import dev.agentsandbox.cli.drill.DrillFixtures.Case;
import dev.agentsandbox.cli.drill.DrillObservation.Decision;
import dev.agentsandbox.policy.event.TimedOut;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@link DrillJudgementTest}'s cases for the steps that stay inside (secrets, privileges, limits,
 * the deadline) and for the one that attacks another live sandbox: held as seen under runc and
 * runsc, and one layer not holding per row.
 */
final class SandboxCases {
  private SandboxCases() {}

  static Map<String, Case> rows() {
    Map<String, Case> rows = new LinkedHashMap<>();
    rows.put(
        "secrets: nothing there",
        new Case("secrets", ran(SECRETS_HELD, 0, List.of(), withTeardown()), true, null));
    rows.put(
        "secrets: the Docker socket is mounted",
        new Case(
            "secrets",
            ran(
                SECRETS_HELD.replace("absent=/var/run/docker.sock", "present=/var/run/docker.sock"),
                0,
                List.of(),
                withTeardown()),
            false,
            "workload"));
    rows.put(
        "secrets: an admin token was found",
        new Case(
            "secrets",
            ran(SECRETS_HELD + "drill: found=/data/admin-token\n", 0, List.of(), withTeardown()),
            false,
            "workload"));
    rows.put(
        "escalation: nobody, no capabilities, no setuid",
        new Case(
            "privilege-escalation",
            ran(ESCALATION_HELD, 0, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "escalation: an effective capability",
        new Case(
            "privilege-escalation",
            ran(
                ESCALATION_HELD.replace("capeff=0000000000000000", "capeff=00000000a80425fb"),
                0,
                List.of(),
                withTeardown()),
            false,
            "workload"));
    rows.put(
        "escalation: running as root",
        new Case(
            "privilege-escalation",
            ran(ESCALATION_HELD.replace("uid=65534", "uid=0"), 0, List.of(), withTeardown()),
            false,
            "workload"));
    rows.put(
        "escalation: a setuid program",
        new Case(
            "privilege-escalation",
            ran(ESCALATION_HELD + "drill: setid=/bin/su\n", 0, List.of(), withTeardown()),
            false,
            "workload"));
    rows.put(
        "fork bomb under runc: a fork fails",
        new Case(
            "fork-bomb",
            ran(
                "drill: fork-bomb=starting\nsh: can't fork: Resource temporarily unavailable\n",
                2,
                List.of(),
                withTeardown()),
            true,
            null));
    rows.put(
        "fork bomb under gVisor: the sandbox is killed",
        new Case(
            "fork-bomb",
            ran("drill: fork-bomb=starting\n", 2, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "fork bomb: every process started",
        new Case(
            "fork-bomb",
            ran(
                "drill: fork-bomb=starting\ndrill: forks-started=320\n",
                0,
                List.of(),
                withTeardown()),
            false,
            "limits"));
    rows.put(
        "memory under runc: the hog is killed",
        new Case(
            "memory-exhaustion",
            ran("drill: memory-hog=starting\ndrill: hog-exit=137\n", 0, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "memory under gVisor: the sandbox is killed",
        new Case(
            "memory-exhaustion",
            ran("drill: memory-hog=starting\n", 137, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "memory: still growing when the deadline killed it (not the cap's doing)",
        new Case(
            "memory-exhaustion",
            new DrillObservation(
                RUN,
                "deadline",
                "deadline",
                137,
                "drill: memory-hog=starting\n",
                List.of(),
                withTeardown(),
                null),
            false,
            "limits"));
    rows.put(
        "fork bomb: still running when the deadline killed it",
        new Case(
            "fork-bomb",
            new DrillObservation(
                RUN,
                "deadline",
                "deadline",
                137,
                "drill: fork-bomb=starting\n",
                List.of(),
                withTeardown(),
                null),
            false,
            "limits"));
    rows.put(
        "memory: the hog held it all",
        new Case(
            "memory-exhaustion",
            ran("drill: memory-hog=starting\ndrill: hog-exit=0\n", 0, List.of(), withTeardown()),
            false,
            "limits"));
    rows.put(
        "run forever: killed at the deadline",
        new Case(
            "run-forever",
            new DrillObservation(
                RUN,
                "deadline",
                "deadline",
                137,
                "drill: forever=started\n",
                List.of(),
                withTeardown(row(30, new TimedOut(60, "killed at the deadline"))),
                null),
            true,
            null));
    rows.put(
        "run forever: it exited on its own before the deadline",
        new Case(
            "run-forever",
            ran("drill: forever=started\n", 0, List.of(), withTeardown()),
            false,
            "deadline"));
    rows.put(
        "another sandbox: nothing reached it, its proxy or its listener",
        new Case(
            "another-live-sandbox",
            attack(ATTACK_HELD, PEER_DENIED, PEER_ROWS, target(TARGET_HELD, List.of(), "killed")),
            true,
            null));
    rows.put(
        "another sandbox: a direct connection was made",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD.replace("direct-exit=28", "direct-exit=52"),
                PEER_DENIED,
                PEER_ROWS,
                target(TARGET_HELD, List.of(), "killed")),
            false,
            "network"));
    rows.put(
        "another sandbox: its listener accepted a connection",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD,
                PEER_DENIED,
                PEER_ROWS,
                target(TARGET_HELD + "drill: connection=2\n", List.of(), "killed")),
            false,
            "target"));
    rows.put(
        "another sandbox: its proxy made a decision (someone used it)",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD,
                PEER_DENIED,
                PEER_ROWS,
                target(
                    TARGET_HELD,
                    List.of(new Decision("deny", "172.30.0.3", 8080, "ip-literal")),
                    "killed")),
            false,
            "target"));
    rows.put(
        "another sandbox: the other run's proxy answered",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD.replace("peer-proxy-exit=7", "peer-proxy-exit=0"),
                PEER_DENIED,
                PEER_ROWS,
                target(TARGET_HELD, List.of(), "killed")),
            false,
            "network"));
    rows.put(
        "another sandbox: this run's proxy allowed it",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD.replace("proxied-code=403", "proxied-code=200"),
                List.of(new Decision("allow", "172.30.0.3", 8080, "allowed")),
                PEER_ROWS,
                target(TARGET_HELD, List.of(), "killed")),
            false,
            "proxy"));
    rows.put(
        "another sandbox: no deny row in the audit log",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD, PEER_DENIED, withTeardown(), target(TARGET_HELD, List.of(), "killed")),
            false,
            "audit"));
    rows.put(
        "another sandbox: the target was gone before the attack ended",
        new Case(
            "another-live-sandbox",
            attack(ATTACK_HELD, PEER_DENIED, PEER_ROWS, target(TARGET_HELD, List.of(), "deadline")),
            false,
            "target"));
    rows.put(
        "another sandbox: an address the target printed was not tried",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD,
                PEER_DENIED,
                PEER_ROWS,
                target(
                    TARGET_HELD.replace("drill: ready", "drill: address=10.99.0.3\ndrill: ready"),
                    List.of(),
                    "killed")),
            false,
            "network"));
    rows.put(
        "another sandbox: its own check was not counted (a silent listener proves nothing)",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD,
                PEER_DENIED,
                PEER_ROWS,
                target(
                    TARGET_HELD
                        .replace("drill: connection=1\n", "")
                        .replace("self-check=1", "self-check=0"),
                    List.of(),
                    "killed")),
            false,
            "target"));
    rows.put(
        "another sandbox: no target was started",
        new Case(
            "another-live-sandbox", ran(ATTACK_HELD, 0, PEER_DENIED, PEER_ROWS), false, "target"));
    return rows;
  }
}
