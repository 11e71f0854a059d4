package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import java.time.Duration;

/** Connects to the Docker Engine API the way the {@code docker} CLI would ({@code DOCKER_HOST}). */
public final class DockerClients {
  /**
   * The Engine API connections one live run may hold for its whole life, with room to spare: an
   * idle session held five in {@code bench/session-api-bench.sh density} (the step runner's exec,
   * the waits on its workload and proxy, the proxy's decisions), a one-shot run fewer.
   */
  static final int CONNECTIONS_PER_RUN = 8;

  /** Connections for everything else at once: launches, teardowns, probes, the reaper. */
  static final int SPARE_CONNECTIONS = 64;

  private DockerClients() {}

  /**
   * A client for {@code DOCKER_HOST}, or {@code unix:///var/run/docker.sock} when it is unset,
   * sized for the control plane's default run limit.
   */
  public static DockerClient fromEnvironment() {
    return fromEnvironment(DockerBackendConfig.DEFAULT_CONCURRENT_RUNS);
  }

  /**
   * A client whose connection pool holds {@code runs} live runs' long-lived calls and still has
   * room for launches and teardowns ({@link #connectionsFor}): with a pool too small, the run after
   * it is full waited for a connection until its request timed out (180 s), and so did every other
   * call, closing a session included. No response timeout: waiting for a workload and following its
   * output are long-lived calls.
   */
  public static DockerClient fromEnvironment(int runs) {
    DefaultDockerClientConfig config =
        DefaultDockerClientConfig.createDefaultConfigBuilder().build();
    ApacheDockerHttpClient http =
        new ApacheDockerHttpClient.Builder()
            .dockerHost(config.getDockerHost())
            .sslConfig(config.getSSLConfig())
            .maxConnections(connectionsFor(runs))
            .connectionTimeout(Duration.ofSeconds(10))
            .build();
    return DockerClientImpl.getInstance(config, http);
  }

  /** The pool size for {@code runs} live runs: never below the 256 it always had. */
  static int connectionsFor(int runs) {
    if (runs < 1) {
      throw new IllegalArgumentException("runs must be at least 1: " + runs);
    }
    return Math.max(256, runs * CONNECTIONS_PER_RUN + SPARE_CONNECTIONS);
  }
}
