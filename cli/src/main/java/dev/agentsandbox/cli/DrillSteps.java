package dev.agentsandbox.cli;

import dev.agentsandbox.cli.DrillObservation.AuditRef;
import dev.agentsandbox.cli.DrillObservation.Decision;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.policy.event.Reaped;
import dev.agentsandbox.policy.event.Refused;
import dev.agentsandbox.policy.event.TimedOut;
import dev.agentsandbox.policy.event.TornDown;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The drill's hostile steps, each a shell script for the workload image's busybox and curl that
 * tries to break one layer and prints what happened as {@code drill: key=value} lines, and the
 * judgement of each layer's refusal. docs/runs.md describes them.
 *
 * <p>A judgement fails closed: a marker that is missing, a row that is absent or a value that does
 * not parse counts as not held.
 */
final class DrillSteps {
  /** curl's exit statuses that mean no TCP connection was made: refused/unreachable, timed out. */
  static final Set<Integer> NO_CONNECTION = Set.of(7, 28);

  static final String DENY = EventType.EGRESS_DENY.wireName();
  static final String TIMEOUT = EventType.TIMEOUT.wireName();
  static final String TEARDOWN = EventType.TEARDOWN.wireName();
  static final String REFUSED = EventType.REFUSED.wireName();

  private static final String NO_PROXY_ENV =
      "env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u all_proxy -u ALL_PROXY"
          + " -u no_proxy -u NO_PROXY ";

  private DrillSteps() {}

  /** Every step, in the order the transcript lists them. */
  static List<DrillStep> all(DrillSetup setup) {
    return List.of(
        unlistedHost(setup),
        directConnect(setup),
        proxyOverridden(setup),
        proxyEnvThroughApi(setup),
        metadata(setup),
        hostAndGateway(setup),
        anotherSandbox(setup),
        dns(setup),
        secrets(setup),
        escalation(setup),
        forkBomb(setup),
        memory(setup),
        runForever(setup));
  }

  static DrillStep byName(DrillSetup setup, String name) {
    return all(setup).stream()
        .filter(s -> s.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no drill step is named " + name));
  }

  private static List<String> sh(String script) {
    return List.of("sh", "-c", script);
  }

  static DrillStep unlistedHost(DrillSetup s) {
    String host = s.unlistedHost();
    return new DrillStep(
        "unlisted-host-through-proxy",
        "reach "
            + host
            + ", which the allow-list does not name, through the proxy (HTTPS and HTTP)",
        sh(
            "curl -sS -m 20 -o /dev/null -w 'drill: https-code=%{http_code}\\n' https://"
                + host
                + "/; echo \"drill: https-exit=$?\"\n"
                + "curl -sS -m 20 -o /dev/null -w 'drill: http-code=%{http_code}\\n' http://"
                + host
                + "/; echo \"drill: http-exit=$?\"\n"),
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
        sh(
            NO_PROXY_ENV
                + "curl -sS -m 8 -o /dev/null -w 'drill: code=%{http_code}\\n' http://"
                + target
                + "/; echo \"drill: exit=$?\"\n"),
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
    String proxy = "http://" + target;
    return new DrillStep(
        "proxy-variables-overridden",
        "point the proxy variables at " + target + " (a proxy of the agent's choosing) and use it",
        sh(
            "export http_proxy="
                + proxy
                + " https_proxy="
                + proxy
                + " HTTP_PROXY="
                + proxy
                + " HTTPS_PROXY="
                + proxy
                + "\ncurl -sS -m 8 -o /dev/null -w 'drill: code=%{http_code}\\n' http://"
                + s.unlistedHost()
                + "/; echo \"drill: exit=$?\"\n"),
        Map.of(),
        false,
        seen ->
            List.of(
                noConnection(seen, "exit", target),
                notSeenByProxy(seen, s.unlistedHost()),
                torndown(seen)));
  }

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
                  "an " + REFUSED + " row with reason env_refused naming HTTPS_PROXY",
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
        sh(
            NO_PROXY_ENV
                + "curl -sS -m 8 -o /dev/null -w 'drill: direct-code=%{http_code}\\n' http://"
                + target
                + "/latest/meta-data/; echo \"drill: direct-exit=$?\"\n"
                + "curl -sS -m 20 -o /dev/null -w 'drill: proxied-code=%{http_code}\\n' http://"
                + target
                + "/latest/meta-data/; echo \"drill: proxied-exit=$?\"\n"),
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
    StringBuilder script =
        new StringBuilder(
            "gw=$(ip route 2>/dev/null | awk '/^default/ {print $3; exit}')\n"
                + "echo \"drill: gateway=${gw:-none}\"\n"
                + "targets=\"");
    for (String target : s.hostTargets()) {
      script.append(target).append(' ');
    }
    script
        .append("\"\n")
        .append(
            "if [ -n \"$gw\" ]; then for p in 22 80 443 2375 8080;"
                + " do targets=\"$targets $gw:$p\"; done; fi\n")
        // Three at a time: each refused connection can take seconds to fail (an ARP timeout), and
        // under gVisor the pids cap counts the Sentry's threads, so not all at once.
        .append("i=0\n")
        .append("for t in $targets; do\n")
        .append("  ( ")
        .append(NO_PROXY_ENV)
        .append("curl -sS -m 5 -o /dev/null http://$t/ 2>/dev/null;")
        .append(" echo \"drill: target=$t exit=$?\" ) &\n")
        .append("  i=$((i+1)); if [ $((i % 3)) -eq 0 ]; then wait; fi\n")
        .append("done\n")
        .append("wait\n")
        .append("echo \"drill: done=yes\"\n");
    return new DrillStep(
        "host-and-gateway",
        "connect to the host and the sandbox's gateway: "
            + (s.hostTargets().isEmpty() ? "" : String.join(", ", s.hostTargets()) + ", ")
            + "and the gateway's common service ports",
        sh(script.toString()),
        Map.of(),
        false,
        seen -> {
          List<String> targets = seen.markers().getOrDefault("target", List.of());
          List<String> exits = seen.markers().getOrDefault("exit", List.of());
          List<String> reached = new ArrayList<>();
          for (int i = 0; i < targets.size(); i++) {
            Integer exit = i < exits.size() ? parse(exits.get(i)) : null;
            if (exit == null || !NO_CONNECTION.contains(exit)) {
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

  /**
   * The port the target of {@link #anotherSandbox} listens on (unprivileged: it runs as nobody).
   */
  static final int PEER_PORT = 8080;

  /**
   * The target: a run of the same agent that listens on {@link #PEER_PORT} and counts every
   * connection it accepts, printing the count each time (the handler inherits the script's output
   * as descriptor 3: reopening it through {@code /proc} is refused where the output is a device
   * only root may open, as in a microVM guest). It first connects to itself once, so that a count
   * of 1 printed before it says where it is proves that the counting works in this sandbox; then it
   * prints what an attacker who knows it would use: its addresses and its proxy's address.
   */
  private static List<String> peerListener() {
    String script =
        """
        exec 3>&1
        echo 'echo x >>/tmp/drill-peer-count; echo "drill: connection=$(wc -l </tmp/drill-peer-count)" >&3' >/tmp/drill-peer-seen
        nc -ll -p PORT -e sh /tmp/drill-peer-seen &
        n=0; until netstat -ltn 2>/dev/null | grep -q ':PORT '; do n=$((n+1)); [ $n -gt 300 ] && break; sleep 0.2; done
        echo "drill: listening=$(netstat -ltn 2>/dev/null | grep -c ':PORT ')"
        NOPROXYcurl -sS -m 5 -o /dev/null http://127.0.0.1:PORT/ 2>/dev/null
        n=0; until [ -s /tmp/drill-peer-count ]; do n=$((n+1)); [ $n -gt 100 ] && break; sleep 0.1; done
        echo "drill: self-check=$(cat /tmp/drill-peer-count 2>/dev/null | wc -l)"
        ip -4 addr show 2>/dev/null | awk '/inet / && $2 !~ /^127\\./ {sub("/.*", "", $2); print "drill: address=" $2}'
        p=${HTTP_PROXY#http://}; echo "drill: proxy=${p%/}"
        echo "drill: ready=yes"
        while :; do sleep 5; done
        """;
    return sh(script.replace("PORT", Integer.toString(PEER_PORT)).replace("NOPROXY", NO_PROXY_ENV));
  }

  /**
   * What the attack learns from the target's output: the port, the target's proxy and its
   * addresses, each checked against the address grammar (the target's output is a sandbox's and
   * becomes the attack's arguments); empty until the target has printed all of it.
   */
  static Optional<List<String>> learnedFromPeer(DrillObservation target) {
    if (target.marker("ready").isEmpty()
        || target.marker("listening").filter(l -> !l.equals("0")).isEmpty()
        || target.marker("self-check").filter("1"::equals).isEmpty()) {
      return Optional.empty();
    }
    List<String> addresses = peerAddresses(target);
    Optional<String> proxy =
        target.marker("proxy").filter(p -> DrillSetup.TARGET.matcher(p).matches());
    if (addresses.isEmpty() || proxy.isEmpty()) {
      return Optional.empty();
    }
    List<String> args = new ArrayList<>(List.of(Integer.toString(PEER_PORT), proxy.get()));
    args.addAll(addresses);
    return Optional.of(args);
  }

  private static List<String> peerAddresses(DrillObservation target) {
    return target.markers().getOrDefault("address", List.of()).stream()
        .filter(a -> DrillSetup.ADDRESS.matcher(a).matches() && !a.startsWith("127."))
        .distinct()
        .toList();
  }

  static DrillStep anotherSandbox(DrillSetup s) {
    String script =
        "port=$1; peer_proxy=$2; shift 2\n"
            + "for a in \"$@\"; do\n"
            + "  "
            + NO_PROXY_ENV
            + "curl -sS -m 8 -o /dev/null http://$a:$port/ 2>/dev/null;"
            + " echo \"drill: direct=$a direct-exit=$?\"\n"
            + "  curl -sS -m 20 -o /dev/null -w \"drill: proxied=$a proxied-code=%{http_code}\\n\""
            + " http://$a:$port/ 2>/dev/null; echo \"drill: proxied-exit=$?\"\n"
            + "done\n"
            + NO_PROXY_ENV
            + "curl -sS -m 8 -o /dev/null -x http://$peer_proxy http://$1:$port/ 2>/dev/null;"
            + " echo \"drill: peer-proxy=$peer_proxy peer-proxy-exit=$?\"\n"
            + "echo \"drill: done=yes\"\n";
    return new DrillStep(
        "another-live-sandbox",
        "start a second run of the agent that listens on port "
            + PEER_PORT
            + " and prints its addresses and its proxy's, then, from this run, connect to it"
            + " directly, through this run's proxy, and through the other run's proxy",
        List.of("sh", "-c", script, "drill"),
        Map.of(),
        false,
        seen -> judgeAnotherSandbox(seen),
        new DrillStep.Peer(peerListener(), DrillSteps::learnedFromPeer));
  }

  private static List<DrillCheck> judgeAnotherSandbox(DrillObservation seen) {
    DrillObservation target = seen.peer();
    if (target == null) {
      return List.of(
          DrillCheck.of(
              "target", "a second live run to attack", false, "the target run was not started"));
    }
    List<String> addresses = peerAddresses(target);
    Optional<List<String>> learned = learnedFromPeer(target);
    List<DrillCheck> checks = new ArrayList<>();
    checks.add(
        DrillCheck.of(
            "target",
            "the other run listened, counted its own check connection (so counting works in"
                + " this sandbox), printed its addresses and its proxy's, and was still live when"
                + " the attack ended (the drill killed it then: status killed)",
            learned.isPresent() && "killed".equals(target.status()),
            "listening "
                + show(target.marker("listening"))
                + ", self-check "
                + show(target.marker("self-check"))
                + ", addresses "
                + addresses
                + ", proxy "
                + show(target.marker("proxy"))
                + ", run "
                + target.runId()
                + " status "
                + target.status()));
    Map<String, List<String>> m = seen.markers();
    List<String> direct = m.getOrDefault("direct", List.of());
    List<String> directExits = m.getOrDefault("direct-exit", List.of());
    List<String> reached = new ArrayList<>();
    for (int i = 0; i < direct.size(); i++) {
      Integer exit = i < directExits.size() ? parse(directExits.get(i)) : null;
      if (exit == null || !NO_CONNECTION.contains(exit)) {
        reached.add(direct.get(i) + " (curl exit " + (exit == null ? "?" : exit) + ")");
      }
    }
    boolean allTried =
        seen.marker("done").isPresent() && !addresses.isEmpty() && direct.containsAll(addresses);
    checks.add(
        DrillCheck.of(
            "network",
            "no TCP connection to any of the other run's addresses on port "
                + PEER_PORT
                + " (curl exit 7 or 28 each)",
            allTried && reached.isEmpty(),
            !allTried
                ? "the script did not try every address of the other run (tried " + direct + ")"
                : reached.isEmpty()
                    ? direct.size() + " address(es), none connected"
                    : "connected: " + String.join(", ", reached)));
    List<String> proxied = m.getOrDefault("proxied", List.of());
    List<String> codes = m.getOrDefault("proxied-code", List.of());
    boolean all403 =
        !addresses.isEmpty()
            && proxied.containsAll(addresses)
            && codes.size() == proxied.size()
            && codes.stream().allMatch("403"::equals);
    checks.add(
        DrillCheck.of(
            "workload",
            "through this run's proxy: 403 for each address",
            all403,
            "codes " + codes + " for " + proxied));
    for (String address : addresses) {
      checks.add(
          deniedByProxy(
              seen, address, List.of(PEER_PORT), Set.of("ip-literal", "non-public-address")));
      checks.add(deniedInAudit(seen, address, List.of(PEER_PORT)));
    }
    Optional<Integer> peerProxyExit = number(seen, "peer-proxy-exit");
    checks.add(
        DrillCheck.of(
            "network",
            "no TCP connection to the other run's proxy "
                + show(target.marker("proxy"))
                + " (curl exit 7 or 28)",
            seen.marker("peer-proxy").equals(target.marker("proxy"))
                && peerProxyExit.filter(NO_CONNECTION::contains).isPresent(),
            "tried " + show(seen.marker("peer-proxy")) + ", curl exit " + show(peerProxyExit)));
    // Its own check is connection 1: any other count is a connection from outside.
    List<String> counts = target.markers().getOrDefault("connection", List.of());
    checks.add(
        DrillCheck.of(
            "target",
            "the other run accepted no connection but its own check (its count stayed at 1), and"
                + " its proxy made no decision",
            learned.isPresent() && counts.equals(List.of("1")) && target.egress().isEmpty(),
            "connection counts printed "
                + counts
                + ", "
                + target.egress().size()
                + " decision(s) of its proxy"
                + (target.egress().isEmpty() ? "" : ": " + target.egress())));
    checks.add(torndown(seen));
    checks.add(torndown(target));
    return checks;
  }

  static DrillStep dns(DrillSetup s) {
    String name = s.dnsName();
    String resolver = DrillSetup.address(s.outside());
    return new DrillStep(
        "dns",
        "resolve " + name + " with the sandbox's resolver and with " + resolver + " directly",
        sh(
            lookup(name, "", "resolver-exit")
                + lookup(name, " " + resolver, "direct-exit")
                + "wait\n"),
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

  /** One lookup in the background, its exit status and any answer printed as markers. */
  private static String lookup(String name, String server, String exitKey) {
    return "( out=$(timeout 15 nslookup "
        + name
        + server
        + " 2>&1); echo \"drill: "
        + exitKey
        + "=$?\"; echo \"$out\" | sed -n 's/^Name:[[:space:]]*/drill: answer=/p' ) &\n";
  }

  static DrillStep secrets(DrillSetup s) {
    StringBuilder script = new StringBuilder("for p in");
    for (String path : s.secretPaths()) {
      script.append(' ').append(path);
    }
    script
        .append(
            "; do if [ -e \"$p\" ]; then echo \"drill: present=$p\"; else echo \"drill:"
                + " absent=$p\"; fi; done\n")
        .append(
            "find / -xdev \\( -name docker.sock -o -name containerd.sock -o -name admin-token"
                + " -o -name 'store.db*' \\) 2>/dev/null | head -20 | sed 's/^/drill: found=/'\n")
        .append(
            "ls -A /run/agent-sandbox/credentials 2>/dev/null | sed 's/^/drill: credential=/'\n")
        .append("echo \"drill: done=yes\"\n");
    return new DrillStep(
        "secrets",
        "look for the control plane's data and the host's sockets: "
            + String.join(", ", s.secretPaths())
            + ", and any admin-token, store.db or container runtime socket on the root file system",
        sh(script.toString()),
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
        sh(
            "echo \"drill: uid=$(id -u)\"\n"
                + "sed -n 's/^\\(CapPrm\\|CapEff\\|CapAmb\\|NoNewPrivs\\):[[:space:]]*/drill:"
                + " \\1=/p' /proc/self/status | tr 'A-Z' 'a-z'\n"
                + "find / -xdev \\( -perm -4000 -o -perm -2000 \\) -type f 2>/dev/null | head -20"
                + " | sed 's/^/drill: setid=/'\n"
                + "chroot / true 2>/dev/null; echo \"drill: chroot-exit=$?\"\n"
                + "echo \"drill: done=yes\"\n"),
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
              prm.filter(DrillSteps::zero).isPresent()
                  && eff.filter(DrillSteps::zero).isPresent()
                  && amb.map(DrillSteps::zero).orElse(true);
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
        sh(
            "echo \"drill: fork-bomb=starting\"\n"
                + "n=0\n"
                + "while [ $n -lt "
                + attempts
                + " ]; do sleep 60 & n=$((n+1)); done\n"
                + "echo \"drill: forks-started=$n\"\n"
                + "kill $(jobs -p) 2>/dev/null\n"),
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
        sh(
            "echo \"drill: memory-hog=starting\"\n"
                // tail holds its whole input when it has no newline; dd writes it in 1 MiB blocks.
                + "dd if=/dev/zero bs=1048576 count="
                + bytes / (1024 * 1024)
                + " 2>/dev/null | tail >/dev/null; echo \"drill: hog-exit=$?\"\n"),
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
        sh("echo \"drill: forever=started\"\nwhile :; do sleep 5; done\n"),
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
                  "an " + TIMEOUT + " row",
                  !timeouts.isEmpty(),
                  timeouts.isEmpty() ? "no such row" : "row " + timeouts.getFirst().id()),
              torndown(seen));
        });
  }

  // --- judgements shared by several steps ---

  static DrillCheck noConnection(DrillObservation seen, String exitKey, String target) {
    Optional<Integer> exit = number(seen, exitKey);
    return DrillCheck.of(
        "network",
        "no TCP connection to " + target + " (curl exit 7 or 28)",
        exit.filter(NO_CONNECTION::contains).isPresent(),
        "curl exit " + show(exit));
  }

  static DrillCheck notSeenByProxy(DrillObservation seen, String host) {
    List<Decision> about = seen.egress().stream().filter(d -> d.host().equals(host)).toList();
    return DrillCheck.of(
        "proxy",
        "the run's proxy made no decision about " + host + " (the attempt never reached it)",
        about.isEmpty(),
        about.isEmpty() ? "no decision" : about.size() + " decision(s): " + about);
  }

  static DrillCheck deniedByProxy(
      DrillObservation seen, String host, List<Integer> ports, Set<String> reasons) {
    List<Decision> about = seen.egress().stream().filter(d -> d.host().equals(host)).toList();
    Set<Integer> deniedPorts =
        about.stream()
            .filter(d -> d.decision().equals("deny") && reasons.contains(d.reason()))
            .map(Decision::port)
            .collect(Collectors.toSet());
    boolean anyAllowed = about.stream().anyMatch(d -> !d.decision().equals("deny"));
    return DrillCheck.of(
        "proxy",
        "deny "
            + host
            + " on port(s) "
            + ports
            + " ("
            + String.join(" or ", reasons.stream().sorted().toList())
            + "), never allow",
        deniedPorts.containsAll(ports) && !anyAllowed,
        about.isEmpty()
            ? "no decision about " + host
            : about.stream()
                .map(d -> d.decision() + " " + d.port() + " " + d.reason())
                .collect(Collectors.joining(", ")));
  }

  static DrillCheck deniedInAudit(DrillObservation seen, String host, List<Integer> ports) {
    List<AuditRef> rows =
        seen.rows(EgressRecorded.class).stream()
            .filter(r -> r.as(EgressRecorded.class).filter(e -> !e.allowed()).isPresent())
            .filter(r -> r.as(EgressRecorded.class).get().host().equals(host))
            .filter(r -> seen.runId() != null && seen.runId().equals(r.runId()))
            .toList();
    Set<Integer> auditedPorts =
        rows.stream().map(r -> r.as(EgressRecorded.class).get().port()).collect(Collectors.toSet());
    boolean allowed =
        seen.rows(EgressRecorded.class).stream()
            .map(r -> r.as(EgressRecorded.class).get())
            .anyMatch(e -> e.allowed() && e.host().equals(host));
    return DrillCheck.of(
        "audit",
        "an " + DENY + " row of the run for " + host + " on each port " + ports + ", no allow",
        auditedPorts.containsAll(ports) && !allowed,
        rows.isEmpty()
            ? "no such row"
            : "rows " + rows.stream().map(r -> Long.toString(r.id())).toList());
  }

  /** Every run of the drill must be torn down: the teardown row says everything was removed. */
  static DrillCheck torndown(DrillObservation seen) {
    List<AuditRef> rows =
        seen.audit().stream()
            .filter(r -> r.type().equals(TEARDOWN))
            .filter(r -> seen.runId() != null && seen.runId().equals(r.runId()))
            .toList();
    boolean removed =
        !rows.isEmpty()
            && rows.stream()
                .allMatch(
                    r ->
                        r.as(TornDown.class).map(TornDown::removed).orElse(false)
                            || r.as(Reaped.class).isPresent());
    return DrillCheck.of(
        "cleanup",
        "the run ended and its " + TEARDOWN + " row says everything was removed",
        removed && seen.status() != null && !List.of("pending", "running").contains(seen.status()),
        rows.isEmpty()
            ? "no teardown row (status " + seen.status() + ")"
            : "row " + rows.getFirst().id() + " removed=" + removed);
  }

  private static Optional<Integer> number(DrillObservation seen, String key) {
    return seen.marker(key).map(DrillSteps::parse);
  }

  private static Integer parse(String value) {
    try {
      return Integer.valueOf(value);
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private static boolean zero(String hex) {
    return hex.matches("0+");
  }

  private static String show(Optional<?> value) {
    return value.map(Object::toString).orElse("(not printed)");
  }

  private static String runOf(DrillObservation seen) {
    return seen.runId() == null ? "" : "; run " + seen.runId() + " was created";
  }
}
