package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.HostConfig;
import dev.agentsandbox.backend.Labels;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The proxy image started the way a pool would start it — before its run, with {@code
 * AGENT_SANDBOX_PROXY_AWAIT} and its standard input open — on a private network of its own with a
 * client and an upstream container: before its policy, every request from the client (plain HTTP,
 * CONNECT, bytes that are not HTTP) is refused as {@code policy-pending} and the upstream sees
 * nothing; the policy then arrives over the Engine API's attach (the channel the workload has no
 * way to reach), and decides: the allowed host answers, another host is refused. Everything the
 * test created is removed. The image is {@code AGENT_SANDBOX_PROXY_IMAGE}, else the default.
 */
class PooledProxyImageIT {
  private static final String IMAGE =
      Objects.requireNonNullElse(
          System.getenv("AGENT_SANDBOX_PROXY_IMAGE"), DockerBackendConfig.DEFAULT_PROXY_IMAGE);

  @Test
  void aPooledProxyRefusesEverythingUntilItsPolicyArrivesOverAttach() throws Exception {
    DockerClient client = DockerItSupport.requireDaemon();
    String id = DockerItSupport.SUITE.newRunId();
    Map<String, String> labels =
        Labels.forRun(id, "it-agent", Instant.now().plus(Duration.ofMinutes(30)));
    String network = "asb-" + id + "-pool";
    List<String> containers = new ArrayList<>();
    String networkId = null;
    try {
      networkId =
          DockerCommands.createNetwork(
              client,
              new NetworkSpec(network, true, Map.of(), labels),
              // A block of its own, apart from the other ITs' pools: the image is the subject.
              new SubnetAllocator.Block(0, "10.213.243.0/28", "10.213.243.1", "10.213.243.2"));
      String upstream =
          start(
              client,
              containers,
              create(client, "asb-" + id + "-up", DockerItSupport.WORKLOAD_IMAGE, network, labels)
                  .withCmd(
                      "sh",
                      "-c",
                      "mkdir -p /tmp/www && echo hello-upstream > /tmp/www/index.html"
                          + " && exec busybox httpd -f -v -p 8080 -h /tmp/www"));
      String proxy =
          start(
              client,
              containers,
              create(client, "asb-" + id + "-proxy", IMAGE, network, labels)
                  .withEnv("AGENT_SANDBOX_PROXY_AWAIT=0.0.0.0:3128")
                  .withStdinOpen(true)
                  .withStdInOnce(true));
      String workload =
          start(
              client,
              containers,
              create(
                      client,
                      "asb-" + id + "-client",
                      DockerItSupport.WORKLOAD_IMAGE,
                      network,
                      labels)
                  .withCmd("sleep", "600"));
      awaitLog(client, proxy, "agent-sandbox proxy awaiting its policy on stdin");
      String upAddress = address(client, upstream, network);
      String proxyUrl = "http://" + address(client, proxy, network) + ":3128";

      String plain = curl(client, workload, proxyUrl, "http://up.test:8080/");
      assertThat(plain)
          .startsWith("HTTP/1.1 403")
          .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");
      String tunnel = curl(client, workload, proxyUrl, "-p", "http://up.test:8080/");
      assertThat(tunnel).contains("403").containsIgnoringCase("policy-pending");
      String literal = curl(client, workload, proxyUrl, "http://" + upAddress + ":8080/");
      assertThat(literal).containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");
      String garbage =
          DockerItSupport.exec(
                  client,
                  workload,
                  "printf 'garbage\\r\\n\\r\\n' | timeout 10 nc "
                      + address(client, proxy, network)
                      + " 3128")
              .output();
      assertThat(garbage).containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");
      assertThat(logs(client, upstream)).doesNotContain("GET /");

      String policy =
          """
          {"listen": "0.0.0.0:3128", "allow": ["up.test:8080"],
           "internal": [{"cidr": "%s/32", "ports": [8080]}],
           "hosts": {"up.test": ["%s"], "other.test": ["%s"]},
           "run_id": "%s", "decisions": "-"}
          """
              .formatted(upAddress, upAddress, upAddress, id);
      try (ResultCallback.Adapter<Frame> attached =
          client
              .attachContainerCmd(proxy)
              .withStdIn(new ByteArrayInputStream(policy.getBytes(StandardCharsets.UTF_8)))
              .withFollowStream(true)
              .exec(new ResultCallback.Adapter<>())) {
        awaitLog(client, proxy, "agent-sandbox proxy ready on ");
      }
      assertThat(logs(client, proxy)).contains("agent-sandbox proxy policy applied for run " + id);

      assertThat(curl(client, workload, proxyUrl, "http://up.test:8080/"))
          .startsWith("HTTP/1.1 200")
          .contains("hello-upstream");
      assertThat(curl(client, workload, proxyUrl, "http://other.test:8080/"))
          .startsWith("HTTP/1.1 403")
          .containsIgnoringCase("X-Agent-Sandbox-Denied: not-allowed");
      String decisions = logs(client, proxy);
      assertThat(decisions.split("\"reason\":\"policy-pending\"", -1)).hasSize(5);
      assertThat(decisions).contains("\"run_id\":\"" + id + "\"");
    } finally {
      for (String container : containers) {
        client.removeContainerCmd(container).withForce(true).exec();
      }
      if (networkId != null) {
        client.removeNetworkCmd(networkId).exec();
      }
    }
    assertThat(DockerItSupport.labelledResources(client)).noneMatch(name -> name.contains(id));
  }

  private static com.github.dockerjava.api.command.CreateContainerCmd create(
      DockerClient client, String name, String image, String network, Map<String, String> labels) {
    return client
        .createContainerCmd(image)
        .withName(name)
        .withUser("65534:65534")
        .withLabels(labels)
        .withHostConfig(
            HostConfig.newHostConfig()
                .withRuntime("runc")
                .withNetworkMode(network)
                .withCapDrop(Capability.ALL)
                .withSecurityOpts(ContainerSpec.SECURITY_OPT)
                .withReadonlyRootfs(true)
                .withTmpFs(Map.of("/tmp", "rw,nosuid,nodev,size=16m,mode=1777"))
                .withMemory(256L * 1024 * 1024));
  }

  private static String start(
      DockerClient client,
      List<String> containers,
      com.github.dockerjava.api.command.CreateContainerCmd create) {
    String id = create.exec().getId();
    containers.add(id);
    client.startContainerCmd(id).exec();
    return id;
  }

  private static String address(DockerClient client, String container, String network) {
    return client
        .inspectContainerCmd(container)
        .exec()
        .getNetworkSettings()
        .getNetworks()
        .get(network)
        .getIpAddress();
  }

  private static String curl(DockerClient client, String workload, String proxy, String... args)
      throws InterruptedException {
    return DockerItSupport.exec(
            client,
            workload,
            "curl -sS -i --max-time 10 -x " + proxy + " " + String.join(" ", args) + " 2>&1")
        .output();
  }

  /** The container's output so far, stdout and stderr. */
  private static String logs(DockerClient client, String container) throws InterruptedException {
    StringBuilder out = new StringBuilder();
    ResultCallback.Adapter<Frame> done =
        client
            .logContainerCmd(container)
            .withStdOut(true)
            .withStdErr(true)
            .withFollowStream(false)
            .exec(
                new ResultCallback.Adapter<Frame>() {
                  @Override
                  public void onNext(Frame frame) {
                    synchronized (out) {
                      out.append(new String(frame.getPayload(), StandardCharsets.UTF_8));
                    }
                  }
                });
    if (!done.awaitCompletion(30, TimeUnit.SECONDS)) {
      fail("reading the logs of " + container + " took over 30 s");
    }
    synchronized (out) {
      return out.toString();
    }
  }

  private static void awaitLog(DockerClient client, String container, String line)
      throws InterruptedException {
    for (int i = 0; i < 300; i++) {
      if (logs(client, container).contains(line)) {
        return;
      }
      Thread.sleep(100);
    }
    fail("no '" + line + "' from " + container + " within 30 s: " + logs(client, container));
  }
}
