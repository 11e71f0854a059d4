package dev.agentsandbox.store;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Child process for {@link CrashDurabilityContract}: appends audit rows and prints each id only
 * after {@link AuditLog#append} returned, until it is killed (or a bound is reached).
 */
final class AppendUntilKilled {

  private static final int MAX_APPENDS = 100_000;

  private AppendUntilKilled() {}

  public static void main(String[] args) {
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    try (Store store = Store.open(args[0])) {
      for (int n = 0; n < MAX_APPENDS; n++) {
        AuditRow row =
            store
                .audit()
                .append(new AuditEvent("agent_sandbox.launch", "crash-test", null, null, null));
        out.println(row.id() + " " + row.hash());
      }
    }
  }
}
