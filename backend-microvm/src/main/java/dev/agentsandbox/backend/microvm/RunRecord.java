package dev.agentsandbox.backend.microvm;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;

/**
 * What the reaper needs to find and remove a run's VM after a crash, written to the run's directory
 * before anything else of the run exists: its id, expiry and slot (from which the tap, addresses
 * and nftables elements follow).
 */
record RunRecord(
    @JsonProperty("run_id") String runId,
    @JsonProperty("agent") String agent,
    @JsonProperty("expires_at") long expiresAt,
    @JsonProperty("slot") int slot,
    @JsonProperty("tap") String tap,
    @JsonProperty("host_address") String hostAddress,
    @JsonProperty("guest_address") String guestAddress,
    @JsonProperty("proxy_port") int proxyPort,
    @JsonProperty("proxy_uid") int proxyUid,
    @JsonProperty("internal_cidrs") List<String> internalCidrs) {
  static final String FILE = "run.json";
  private static final ObjectMapper JSON = new ObjectMapper();

  RunRecord {
    internalCidrs = internalCidrs == null ? List.of() : List.copyOf(internalCidrs);
  }

  /** The alias every tap of a run carries, so that a tap alone tells whose it is. */
  static String tapAlias(String runId) {
    return "agent-sandbox run=" + runId;
  }

  Instant expiry() {
    return Instant.ofEpochSecond(expiresAt);
  }

  NftFence.Slot fenceSlot() {
    return new NftFence.Slot(
        runId, tap, guestAddress, hostAddress, proxyPort, proxyUid, internalCidrs);
  }

  void write(Path dir) throws IOException {
    GuestFiles.writeAtomically(dir.resolve(FILE), JSON.writeValueAsBytes(this));
  }

  static RunRecord read(Path dir) throws IOException {
    return JSON.readValue(Files.readAllBytes(dir.resolve(FILE)), RunRecord.class);
  }
}
