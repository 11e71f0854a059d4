package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import java.time.Duration;

/** Connects to the Docker Engine API the way the {@code docker} CLI would ({@code DOCKER_HOST}). */
public final class DockerClients {
  private DockerClients() {}

  /**
   * A client for {@code DOCKER_HOST}, or {@code unix:///var/run/docker.sock} when it is unset. No
   * response timeout: waiting for a workload and following its output are long-lived calls.
   */
  public static DockerClient fromEnvironment() {
    DefaultDockerClientConfig config =
        DefaultDockerClientConfig.createDefaultConfigBuilder().build();
    ApacheDockerHttpClient http =
        new ApacheDockerHttpClient.Builder()
            .dockerHost(config.getDockerHost())
            .sslConfig(config.getSSLConfig())
            .maxConnections(256)
            .connectionTimeout(Duration.ofSeconds(10))
            .build();
    return DockerClientImpl.getInstance(config, http);
  }
}
