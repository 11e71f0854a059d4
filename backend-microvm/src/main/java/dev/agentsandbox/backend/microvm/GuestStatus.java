package dev.agentsandbox.backend.microvm;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.OptionalInt;

/** What the guest init reports on the status port, one line at a time. */
final class GuestStatus {
  private static final int MAX_LINE = 4096;
  private final StringBuilder pending = new StringBuilder();
  private volatile Instant readyAt;
  private volatile Integer exit;
  private volatile String error;
  private volatile boolean outputsFailed;

  synchronized void accept(byte[] chunk) {
    pending.append(new String(chunk, StandardCharsets.UTF_8));
    int newline;
    while ((newline = pending.indexOf("\n")) >= 0) {
      line(pending.substring(0, newline).strip());
      pending.delete(0, newline + 1);
    }
    // The guest writes this port: a line longer than any the init writes is dropped, not kept.
    if (pending.length() > MAX_LINE) {
      pending.setLength(0);
    }
  }

  private void line(String line) {
    if (line.equals("ready")) {
      readyAt = Instant.now();
    } else if (line.startsWith("exit ") && line.substring(5).matches("[0-9]{1,3}")) {
      exit = Integer.parseInt(line.substring(5));
    } else if (line.startsWith("error ")) {
      error = line.substring(6);
    } else if (line.startsWith("outputs failed")) {
      // The host's words, not the guest's: this text reaches the run's record.
      outputsFailed = true;
    }
  }

  java.util.Optional<Instant> readyAt() {
    return java.util.Optional.ofNullable(readyAt);
  }

  OptionalInt exitStatus() {
    Integer value = exit;
    return value == null ? OptionalInt.empty() : OptionalInt.of(value);
  }

  java.util.Optional<String> error() {
    return java.util.Optional.ofNullable(error);
  }

  /** Why the guest could not write its outputs, if it says so. */
  java.util.Optional<String> outputsProblem() {
    return outputsFailed
        ? java.util.Optional.of(
            "the guest could not write all of /workspace/out to its output disk (larger than"
                + " the disk?); what it wrote is kept")
        : java.util.Optional.empty();
  }
}
