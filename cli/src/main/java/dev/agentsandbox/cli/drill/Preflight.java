package dev.agentsandbox.cli.drill;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.cli.AdminApi;
import dev.agentsandbox.cli.drill.DrillTranscript.Configuration;
import dev.agentsandbox.cli.drill.DrillTranscript.Versions;
import dev.agentsandbox.policy.AllowList;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What the drill learns before it starts anything, and the refusals it makes then (docs/runs.md):
 * an agent that is not configured, sandboxes that are disabled, an agent that allows the unlisted
 * host, a TTL over {@link Drill#MAX_TTL_SECONDS}, a backend that is unavailable or not the one
 * named.
 *
 * @param setup what the steps attack with and the agent's limits
 * @param versions the versions of what takes part
 * @param configuration the configuration the drill runs under
 * @param auditBefore the newest audit row before the drill (the refusal step looks after it)
 */
record Preflight(
    DrillSetup setup, Versions versions, Configuration configuration, long auditBefore) {

  static Preflight of(AdminApi client, Drill.Options options, String drillId, String cliVersion)
      throws IOException, InterruptedException {
    String agent = options.agent();
    JsonNode config = client.get("read the sandbox configuration", AdminApi.BASE);
    JsonNode settings = config.path("agents").path(agent);
    if (!settings.isObject()) {
      throw new IllegalStateException(
          "start the drill as agent "
              + agent
              + ": the sandbox configuration has no such agent (configure one with an empty"
              + " allow-list and a short ttl_seconds; docs/runs.md#the-hostile-task-drill)");
    }
    if (!config.path("enabled").asBoolean()) {
      throw new IllegalStateException(
          "start the drill: sandboxes are disabled (config edit, enabled: true)");
    }
    List<String> effective = new ArrayList<>();
    settings.path("effective_allow").forEach(e -> effective.add(e.asText()));
    AllowList allow = AllowList.parse(effective);
    for (int port : List.of(80, 443)) {
      if (allow.evaluate(options.unlistedHost(), port) == AllowList.Verdict.ALLOWED) {
        throw new IllegalStateException(
            "start the drill as agent "
                + agent
                + ": its effective allow-list allows "
                + options.unlistedHost()
                + ":"
                + port
                + ", so the unlisted-host step would prove nothing (name another with"
                + " --unlisted-host, or use an agent that does not allow it)");
      }
    }
    long ttl = settings.path("ttl_seconds").asLong();
    if (ttl > Drill.MAX_TTL_SECONDS) {
      throw new IllegalStateException(
          "start the drill as agent "
              + agent
              + ": its ttl_seconds is "
              + ttl
              + " and the run-forever step waits for it (use an agent with ttl_seconds at most "
              + Drill.MAX_TTL_SECONDS
              + ")");
    }
    JsonNode plan = plan(client, agent, options.backend());
    List<String> credentials = new ArrayList<>();
    settings.path("credentials").fieldNames().forEachRemaining(credentials::add);
    List<String> paths = new ArrayList<>(DrillSetup.DEFAULT_SECRET_PATHS);
    paths.addAll(options.secretPaths());
    DrillSetup setup;
    try {
      setup =
          new DrillSetup(
              drillId,
              agent,
              options.unlistedHost(),
              options.outside(),
              options.metadata(),
              options.hostTargets().isEmpty()
                  ? defaultHostTargets(client.base())
                  : options.hostTargets(),
              options.dnsName(),
              paths,
              credentials,
              settings.path("resources").path("pids").asInt(),
              settings.path("resources").path("memory_mb").asInt(),
              ttl);
    } catch (IllegalArgumentException e) {
      throw new Drill.InvalidOption(e.getMessage(), e);
    }
    JsonNode newest =
        client.get("read the audit log", AdminApi.path(AdminApi.AUDIT, Map.of("limit", "1")));
    long auditBefore =
        newest.path("rows").isEmpty() ? 0 : newest.path("rows").get(0).path("id").asLong();
    Versions versions =
        new Versions(
            cliVersion,
            apiVersion(client),
            plan.path("backend").asText(),
            plan.path("runtime").asText(),
            plan.path("isolation").asText(),
            plan.path("probe").asText());
    Configuration configuration =
        new Configuration(
            config.path("version").asLong(), effective, ttl, settings.path("resources"));
    return new Preflight(setup, versions, configuration, auditBefore);
  }

  /** The control plane's plan of a run of the agent, refused if not on {@code backend}. */
  private static JsonNode plan(AdminApi client, String agent, String backend)
      throws IOException, InterruptedException {
    JsonNode plan =
        client
            .call(
                "plan a run of " + agent,
                client
                    .request(AdminApi.BASE + "/plan", Duration.ofMinutes(2))
                    .header("Content-Type", "application/json")
                    .POST(AdminApi.json(Map.of("agent", agent, "command", List.of("true"))))
                    .build())
            .json();
    if (!plan.path("available").asBoolean(true)) {
      throw new IllegalStateException(
          "start the drill: backend "
              + plan.path("backend").asText()
              + " is unavailable on the control plane ("
              + plan.path("probe").asText()
              + ")");
    }
    if (backend != null && !backend.equals(plan.path("backend").asText())) {
      throw new IllegalStateException(
          "start the drill on backend "
              + backend
              + ": the control plane would run agent "
              + agent
              + " on "
              + plan.path("backend").asText()
              + " (set backend: "
              + backend
              + " in the sandbox configuration, or leave out --backend)");
    }
    return plan;
  }

  private static String apiVersion(AdminApi client) throws IOException, InterruptedException {
    return client
        .get("read the API's OpenAPI document", "/api/openapi.json")
        .path("info")
        .path("version")
        .asText("unknown");
  }

  /** The control plane's own address, when the URL names one that a sandbox could try. */
  static List<String> defaultHostTargets(String base) {
    URI uri = URI.create(base);
    String host = uri.getHost();
    if (host == null || !DrillSetup.ADDRESS.matcher(host).matches() || host.startsWith("127.")) {
      return List.of();
    }
    int port = uri.getPort() > 0 ? uri.getPort() : uri.getScheme().equals("https") ? 443 : 80;
    return List.of(host + ":" + port);
  }
}
