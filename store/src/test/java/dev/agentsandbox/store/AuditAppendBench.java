package dev.agentsandbox.store;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * Load harness (not a test): appends audit rows from several threads through one store and prints
 * the throughput and whether the chain verifies. Numbers are for docs/store.md, never asserted.
 *
 * <p>Usage: {@code java -cp <test classpath> dev.agentsandbox.store.AuditAppendBench URL THREADS
 * APPENDS_PER_THREAD}
 */
final class AuditAppendBench {

  private AuditAppendBench() {}

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    String url = args[0];
    int threads = Integer.parseInt(args[1]);
    int perThread = Integer.parseInt(args[2]);
    try (Store store = Store.open(url)) {
      List<Callable<Void>> writers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        String actor = "bench-" + t;
        writers.add(
            () -> {
              for (int m = 0; m < perThread; m++) {
                store
                    .audit()
                    .append(
                        new AuditEvent(
                            "agent_sandbox.egress.allow",
                            actor,
                            "helper",
                            "run-bench",
                            StoreTestBase.json("{\"host\":\"api.vendor.com\",\"port\":443}")));
              }
              return null;
            });
      }
      long start = System.nanoTime();
      ConcurrencyContract.runAllAtOnce(writers);
      double seconds = (System.nanoTime() - start) / 1e9;
      long total = (long) threads * perThread;
      long verifyStart = System.nanoTime();
      VerifyResult result = store.audit().verify();
      double verifySeconds = (System.nanoTime() - verifyStart) / 1e9;
      out.printf(
          "%s: %d threads x %d appends = %d rows in %.2f s (%.0f appends/s); verify %s, %d rows"
              + " in %.2f s%n",
          store.dialect(),
          threads,
          perThread,
          total,
          seconds,
          total / seconds,
          result.ok() ? "ok" : "FAILED " + result.problems(),
          result.rowsChecked(),
          verifySeconds);
    }
  }
}
