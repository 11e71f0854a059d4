package dev.agentsandbox.cli.drill;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * One hostile step of the drill: what it tries, the run request that tries it, and how each layer's
 * refusal is judged from what was observed. Judging is pure, so {@code drill verify} can judge a
 * transcript again.
 *
 * @param name a stable name, the key in the transcript
 * @param attack what the step tries, in words
 * @param command the workload's command (for a step with a {@link Peer}, the arguments learned from
 *     the peer are appended)
 * @param env the workload's environment (a step that tries to undo the fence by environment)
 * @param refusedByApi whether the API is expected to refuse the request before anything runs
 * @param judge the checks, one per layer, from what was observed
 * @param peer the other live sandbox the step attacks, or null
 */
record DrillStep(
    String name,
    String attack,
    List<String> command,
    Map<String, String> env,
    boolean refusedByApi,
    Function<DrillObservation, List<DrillCheck>> judge,
    Peer peer) {
  DrillStep {
    command = List.copyOf(command);
    env = Map.copyOf(env);
  }

  DrillStep(
      String name,
      String attack,
      List<String> command,
      Map<String, String> env,
      boolean refusedByApi,
      Function<DrillObservation, List<DrillCheck>> judge) {
    this(name, attack, command, env, refusedByApi, judge, null);
  }

  /**
   * The target of a step that attacks another live sandbox: a run of the same agent that the drill
   * starts first and keeps alive until the attack has ended.
   *
   * @param command the target's command, which prints what an attacker would need to know about it
   * @param learned the arguments the attack's command gets, from the target's output so far; empty
   *     until the target has printed all of it (each value checked against a strict grammar, since
   *     the target's output is a sandbox's)
   */
  record Peer(List<String> command, Function<DrillObservation, Optional<List<String>>> learned) {
    Peer {
      command = List.copyOf(command);
    }
  }

  /** The command the step's run ran: with a peer, what it learned from the peer appended. */
  List<String> commandAgainst(DrillObservation peerSeen) {
    if (peer == null || peerSeen == null) {
      return command;
    }
    List<String> full = new ArrayList<>(command);
    full.addAll(peer.learned().apply(peerSeen).orElse(List.of()));
    return full;
  }

  /** Whether every check held. */
  static boolean held(List<DrillCheck> checks) {
    return !checks.isEmpty() && checks.stream().allMatch(DrillCheck::held);
  }
}
