package dev.agentsandbox.cli.drill;

import static dev.agentsandbox.cli.drill.Judgements.deniedByProxy;
import static dev.agentsandbox.cli.drill.Judgements.deniedInAudit;
import static dev.agentsandbox.cli.drill.Judgements.noConnection;
import static dev.agentsandbox.cli.drill.Judgements.notSeenByProxy;
import static dev.agentsandbox.cli.drill.Judgements.number;
import static dev.agentsandbox.cli.drill.Judgements.show;
import static dev.agentsandbox.cli.drill.Judgements.torndown;

import dev.agentsandbox.cli.drill.DrillObservation.AuditRef;
import dev.agentsandbox.policy.event.Refused;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The steps that try to get out: past the allow-list, around the proxy, to the metadata address,
 * the host and its gateway, and through DNS. Each is its script ({@link DrillScript}) with the
 * drill's values as arguments, and the judgement of each layer's refusal.
 */
final class EgressSteps {
  private EgressSteps() {}

  static DrillStep unlistedHost(DrillSetup s) {
    String host = s.unlistedHost();
    return new DrillStep(
        "unlisted-host-through-proxy",
        "reach "
            + host
            + ", which the allow-list does not name, through the proxy (HTTPS and HTTP)",
        DrillScript.UNLISTED_HOST.command(host),
        Map.of(),
        false,
        seen -> {
          List<DrillCheck> checks = new ArrayList<>();
          Optional<Integer> httpsExit = number(seen, "https-exit");
          checks.add(
              DrillCheck.of(
                  "workload",
                  "the CONNECT is refused (curl fails, no answer from the host) and plain HTTP gets"
                      + " 403",
                  httpsExit.isPresent()
                      && httpsExit.get() != 0
                      && seen.marker("https-code").filter("000"::equals).isPresent()
                      && seen.marker("http-code").filter("403"::equals).isPresent(),
                  "https exit "
                      + show(httpsExit)
                      + " code "
                      + show(seen.marker("https-code"))
                      + ", http code "
                      + show(seen.marker("http-code"))));
          checks.add(deniedByProxy(seen, host, List.of(443, 80), Set.of("not-allowed")));
          checks.add(deniedInAudit(seen, host, List.of(443, 80)));
          checks.add(torndown(seen));
          return checks;
        });
  }

  static DrillStep directConnect(DrillSetup s) {
    String target = s.outside();
    return new DrillStep(
        "direct-connect-without-proxy",
        "unset every proxy variable and connect straight to " + target + ", bypassing the proxy",
        DrillScript.DIRECT_CONNECT.command(target),
        Map.of(),
        false,
        seen ->
            List.of(
                noConnection(seen, "exit", target),
                notSeenByProxy(seen, DrillSetup.address(target)),
                torndown(seen)));
  }

  static DrillStep proxyOverridden(DrillSetup s) {
    String target = s.outside();
    return new DrillStep(
        "proxy-variables-overridden",
        "point the proxy variables at " + target + " (a proxy of the agent's choosing) and use it",
        DrillScript.PROXY_OVERRIDDEN.command(target, s.unlistedHost()),
        Map.of(),
        false,
        seen ->
            List.of(
                noConnection(seen, "exit", target),
                notSeenByProxy(seen, s.unlistedHost()),
                torndown(seen)));
  }

  /**
   * A request the API must refuse: no script, the command only carries the drill's id, by which the
   * refusal's audit row is told from another drill's.
   */
  static DrillStep proxyEnvThroughApi(DrillSetup s) {
    String marker = "drill-" + s.drillId() + "-env";
    return new DrillStep(
        "proxy-variables-through-api",
        "ask the API to start a run whose environment sets HTTPS_PROXY to " + s.outside(),
        List.of("echo", marker),
        Map.of("HTTPS_PROXY", "http://" + s.outside()),
        true,
        seen -> {
          DrillObservation.Refusal refusal = seen.refusal();
          List<AuditRef> refused =
              seen.rows(Refused.class).stream()
                  .filter(
                      r ->
                          r.as(Refused.class)
                              .filter(e -> e.reason().equals("env_refused"))
                              .filter(e -> e.command().stream().anyMatch(a -> a.contains(marker)))
                              .filter(e -> e.envKeys().contains("HTTPS_PROXY"))
                              .isPresent())
                  .toList();
          return List.of(
              DrillCheck.of(
                  "api",
                  "400 env_refused, and no run is created",
                  refusal != null
                      && refusal.httpStatus() == 400
                      && "env_refused".equals(refusal.error())
                      && seen.runId() == null,
                  refusal == null
                      ? "the API accepted the request" + runOf(seen)
                      : refusal.httpStatus() + " " + refusal.error() + runOf(seen)),
              DrillCheck.of(
                  "audit",
                  "an " + DrillSteps.REFUSED + " row with reason env_refused naming HTTPS_PROXY",
                  !refused.isEmpty(),
                  refused.isEmpty() ? "no such row" : "row " + refused.getFirst().id()));
        });
  }

  static DrillStep metadata(DrillSetup s) {
    String target = s.metadata();
    String address = DrillSetup.address(target);
    return new DrillStep(
        "metadata-address",
        "read the cloud metadata service at " + target + ", directly and through the proxy",
        DrillScript.METADATA.command(target),
        Map.of(),
        false,
        seen ->
            List.of(
                noConnection(seen, "direct-exit", target),
                DrillCheck.of(
                    "workload",
                    "through the proxy: 403",
                    seen.marker("proxied-code").filter("403"::equals).isPresent(),
                    "code " + show(seen.marker("proxied-code"))),
                deniedByProxy(
                    seen,
                    address,
                    List.of(DrillSetup.port(target)),
                    Set.of("ip-literal", "non-public-address")),
                deniedInAudit(seen, address, List.of(DrillSetup.port(target))),
                torndown(seen)));
  }

  static DrillStep hostAndGateway(DrillSetup s) {
    return new DrillStep(
        "host-and-gateway",
        "connect to the host and the sandbox's gateway: "
            + (s.hostTargets().isEmpty() ? "" : String.join(", ", s.hostTargets()) + ", ")
            + "and the gateway's common service ports",
        DrillScript.HOST_AND_GATEWAY.command(s.hostTargets()),
        Map.of(),
        false,
        seen -> {
          List<String> targets = seen.markers().getOrDefault("target", List.of());
          List<String> exits = seen.markers().getOrDefault("exit", List.of());
          List<String> reached = new ArrayList<>();
          for (int i = 0; i < targets.size(); i++) {
            Integer exit = i < exits.size() ? Judgements.parse(exits.get(i)) : null;
            if (exit == null || !Judgements.NO_CONNECTION.contains(exit)) {
              reached.add(targets.get(i) + " (curl exit " + (exit == null ? "?" : exit) + ")");
            }
          }
          boolean finished = seen.marker("done").isPresent();
          boolean allTargetsTried = targets.containsAll(s.hostTargets());
          return List.of(
              DrillCheck.of(
                  "network",
                  "no TCP connection to any host or gateway address (curl exit 7 or 28 each)",
                  finished && allTargetsTried && reached.isEmpty(),
                  !finished || !allTargetsTried
                      ? "the script did not try every target"
                      : targets.isEmpty()
                          ? "no gateway route inside and no --host-target: nothing to reach"
                          : reached.isEmpty()
                              ? targets.size()
                                  + " targets, none connected (gateway "
                                  + show(seen.marker("gateway"))
                                  + ")"
                              : "connected: " + String.join(", ", reached)),
              torndown(seen));
        });
  }

  static DrillStep dns(DrillSetup s) {
    String name = s.dnsName();
    String resolver = DrillSetup.address(s.outside());
    return new DrillStep(
        "dns",
        "resolve " + name + " with the sandbox's resolver and with " + resolver + " directly",
        DrillScript.DNS.command(name, resolver),
        Map.of(),
        false,
        seen -> {
          Optional<Integer> viaResolver = number(seen, "resolver-exit");
          Optional<Integer> direct = number(seen, "direct-exit");
          List<String> answers = seen.markers().getOrDefault("answer", List.of());
          return List.of(
              DrillCheck.of(
                  "network",
                  "neither lookup answers (nslookup fails both times)",
                  viaResolver.filter(e -> e != 0).isPresent()
                      && direct.filter(e -> e != 0).isPresent()
                      && answers.isEmpty(),
                  "resolver exit "
                      + show(viaResolver)
                      + ", direct exit "
                      + show(direct)
                      + (answers.isEmpty() ? ", no answer" : ", answered " + answers)),
              torndown(seen));
        });
  }

  private static String runOf(DrillObservation seen) {
    return seen.runId() == null ? "" : "; run " + seen.runId() + " was created";
  }
}
