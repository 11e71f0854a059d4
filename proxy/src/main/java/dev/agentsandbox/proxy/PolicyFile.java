package dev.agentsandbox.proxy;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The proxy's policy file ({@code --policy FILE}), as the Docker and Kubernetes backends generate
 * it. Unknown fields are refused so a misspelt limit is an error, not a silently ignored line.
 *
 * @param listen {@code HOST:PORT}
 * @param allow allow-list entries
 * @param instanceAllow instance egress policy entries, or null for unrestricted
 * @param internalCidrs declared internal destinations
 * @param hosts a fixed name-to-addresses table used instead of DNS, or null
 * @param dnsServer the only name server to ask, {@code HOST:PORT}, or null
 * @param runId the run id, or null
 * @param decisions a file path or {@code -}, or null
 * @param metrics {@code HOST:PORT}, or null
 * @param limits limits, each optional
 */
record PolicyFile(
    @JsonProperty("listen") String listen,
    @JsonProperty("allow") List<String> allow,
    @JsonProperty("instance_allow") List<String> instanceAllow,
    @JsonProperty("internal_cidrs") List<String> internalCidrs,
    @JsonProperty("hosts") Map<String, List<String>> hosts,
    @JsonProperty("dns_server") String dnsServer,
    @JsonProperty("run_id") String runId,
    @JsonProperty("decisions") String decisions,
    @JsonProperty("metrics") String metrics,
    @JsonProperty("limits") LimitsJson limits) {

  /**
   * Optional limits in the policy file; absent fields keep their defaults.
   *
   * @param connectTimeoutMs connect timeout in milliseconds
   * @param dnsTimeoutMs resolve timeout in milliseconds
   * @param idleTimeoutMs idle timeout in milliseconds
   * @param maxLifetimeMs maximum tunnel lifetime in milliseconds
   * @param maxConnections maximum concurrent client connections
   * @param maxHeaderBytes maximum request head size
   * @param ioThreads event-loop threads
   */
  record LimitsJson(
      @JsonProperty("connect_timeout_ms") Long connectTimeoutMs,
      @JsonProperty("dns_timeout_ms") Long dnsTimeoutMs,
      @JsonProperty("idle_timeout_ms") Long idleTimeoutMs,
      @JsonProperty("max_lifetime_ms") Long maxLifetimeMs,
      @JsonProperty("max_connections") Integer maxConnections,
      @JsonProperty("max_header_bytes") Integer maxHeaderBytes,
      @JsonProperty("io_threads") Integer ioThreads) {}

  static PolicyFile read(Path file) {
    ObjectMapper mapper =
        new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    try {
      return mapper.readValue(Files.readAllBytes(file), PolicyFile.class);
    } catch (UnrecognizedPropertyException e) {
      throw new InvalidProxyConfigException(
          "reading policy file "
              + file
              + ": unknown field '"
              + Echo.of(e.getPropertyName())
              + "' (known: "
              + e.getKnownPropertyIds()
              + ")");
    } catch (JsonProcessingException e) {
      throw new InvalidProxyConfigException(
          "reading policy file "
              + file
              + ": "
              + Echo.of(e.getOriginalMessage())
              + (e.getLocation() == null
                  ? ""
                  : " at line "
                      + e.getLocation().getLineNr()
                      + " column "
                      + e.getLocation().getColumnNr()));
    } catch (IOException e) {
      throw new InvalidProxyConfigException(
          "reading policy file " + file + " failed: " + e.getMessage(), e);
    }
  }
}
