package dev.agentsandbox.backend.microvm;

import static dev.agentsandbox.backend.microvm.MicroVmItSupport.SUITE;
import static dev.agentsandbox.testing.ItRuns.noEgress;

import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A measurement, never a test: one session on the microVM backend, then N {@code echo hi} steps
 * (exec to end, output received) and M puts then gets of 1 MiB, with the load average before and
 * after; prints one JSON line. Run by bench/microvm-session-bench.sh.
 */
public final class SessionStepBench {
  private SessionStepBench() {}

  public static void main(String[] args) throws Exception {
    int steps = args.length > 0 ? Integer.parseInt(args[0]) : 100;
    int files = args.length > 1 ? Integer.parseInt(args[1]) : 20;
    MicroVmBackend backend = MicroVmItSupport.requireBackend();
    String load = Files.readString(Path.of("/proc/loadavg")).strip();
    String runId = "itsb" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
    Instant asked = Instant.now();
    SessionSandbox session =
        backend.openSession(
            SUITE.spec(
                runId, List.of("true"), noEgress(), SUITE.smallCaps(), Duration.ofMinutes(30)),
            SandboxListener.NONE);
    long openMs = Duration.between(asked, Instant.now()).toMillis();
    try {
      List<Double> step = new ArrayList<>();
      for (int i = 0; i < steps + 5; i++) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        StepListener listener = out::writeBytes;
        long start = System.nanoTime();
        StepEnd end =
            session
                .exec(
                    new StepSpec(
                        i + 1, List.of("echo", "hi"), Map.of(), WorkspacePath.root(), null),
                    listener)
                .awaitEnd(Instant.now().plusSeconds(60))
                .orElseThrow();
        double ms = (System.nanoTime() - start) / 1e6;
        if (end.exitStatus().orElse(-1) != 0 || out.size() != 3) {
          throw new IllegalStateException("step " + (i + 1) + " ended " + end);
        }
        if (i >= 5) {
          step.add(ms);
        }
      }
      byte[] mib = new byte[1 << 20];
      ThreadLocalRandom.current().nextBytes(mib);
      List<Double> put = new ArrayList<>();
      List<Double> get = new ArrayList<>();
      List<Double> both = new ArrayList<>();
      for (int i = 0; i < files + 2; i++) {
        WorkspacePath path = WorkspacePath.parse("bench/f" + i);
        long start = System.nanoTime();
        session.putFile(path, new ByteArrayInputStream(mib), mib.length);
        long mid = System.nanoTime();
        ByteArrayOutputStream back = new ByteArrayOutputStream(mib.length);
        session.readFile(path, back, mib.length);
        long end = System.nanoTime();
        if (!Arrays.equals(back.toByteArray(), mib)) {
          throw new IllegalStateException("1 MiB came back different");
        }
        if (i >= 2) {
          put.add((mid - start) / 1e6);
          get.add((end - mid) / 1e6);
          both.add((end - start) / 1e6);
        }
      }
      String after = Files.readString(Path.of("/proc/loadavg")).strip();
      System.out.printf(
          "{\"backend\": \"microvm\", \"runtime\": \"%s\", \"open_ms\": %d, \"steps\": %d,"
              + " \"step_p50_ms\": %.1f, \"step_p99_ms\": %.1f, \"files\": %d,"
              + " \"put_1mib_p50_ms\": %.1f, \"get_1mib_p50_ms\": %.1f, \"put_get_1mib_p50_ms\": %.1f,"
              + " \"put_get_1mib_p99_ms\": %.1f, \"loadavg_before\": \"%s\", \"loadavg_after\": \"%s\"}%n",
          session.runtime(),
          openMs,
          step.size(),
          percentile(step, 50),
          percentile(step, 99),
          both.size(),
          percentile(put, 50),
          percentile(get, 50),
          percentile(both, 50),
          percentile(both, 99),
          load,
          after);
    } finally {
      session.kill();
      session.await(Instant.now().plusSeconds(60));
      session.teardown();
    }
  }

  private static double percentile(List<Double> values, int p) {
    List<Double> sorted = values.stream().sorted().toList();
    int index = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, index)));
  }
}
