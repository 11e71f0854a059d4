package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.testing.ItRuns;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
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
import java.util.concurrent.TimeUnit;

/**
 * A measurement, never a test: per runtime the daemon has, OPENS session opens (cold, no proxy
 * pool), then in the last one N {@code echo hi} steps (exec to end, output received) and M puts
 * then gets of 1 MiB, and beside them, in the same workload container, N {@code docker exec CID
 * echo hi} from the Docker CLI as the baseline; the load average before and after. Prints one JSON
 * line per runtime. Run by bench/docker-session-bench.sh.
 */
public final class DockerSessionBench {
  private DockerSessionBench() {}

  public static void main(String[] args) throws Exception {
    int steps = args.length > 0 ? Integer.parseInt(args[0]) : 100;
    int files = args.length > 1 ? Integer.parseInt(args[1]) : 20;
    int opens = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    DockerClient client = DockerItSupport.requireDaemon();
    DockerBackend backend = new DockerBackend(client, DockerBackendConfig.defaults());
    for (String runtime : DockerItSupport.runtimes()) {
      measure(backend, runtime, steps, files, opens);
    }
    backend.close();
  }

  private static void measure(
      DockerBackend backend, String runtime, int steps, int files, int opens) throws Exception {
    String load = Files.readString(Path.of("/proc/loadavg")).strip();
    List<Double> open = new ArrayList<>();
    DockerSession session = null;
    for (int i = 0; i < opens; i++) {
      if (session != null) {
        session.kill();
        session.await(Instant.now().plusSeconds(60));
        session.teardown();
      }
      String runId = "dsb" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
      RunSpec spec =
          DockerItSupport.SUITE.spec(
              runId,
              List.of("<steps>"),
              ItRuns.noEgress(),
              DockerItSupport.SUITE.smallCaps(),
              Duration.ofMinutes(30));
      long start = System.nanoTime();
      session = backend.openSession(spec, SandboxListener.NONE, runtime);
      open.add((System.nanoTime() - start) / 1e6);
    }
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
      List<Double> cli = new ArrayList<>();
      for (int i = 0; i < steps + 5; i++) {
        long start = System.nanoTime();
        Process p =
            new ProcessBuilder("docker", "exec", session.workloadContainerId(), "echo", "hi")
                .redirectErrorStream(true)
                .start();
        String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0 || !said.equals("hi\n")) {
          throw new IllegalStateException("docker exec answered " + said);
        }
        if (i >= 5) {
          cli.add((System.nanoTime() - start) / 1e6);
        }
      }
      byte[] mib = new byte[1 << 20];
      ThreadLocalRandom.current().nextBytes(mib);
      List<Double> both = new ArrayList<>();
      List<Double> put = new ArrayList<>();
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
          both.add((end - start) / 1e6);
        }
      }
      String after = Files.readString(Path.of("/proc/loadavg")).strip();
      System.out.printf(
          "{\"backend\": \"docker\", \"runtime\": \"%s\", \"opens\": %d, \"open_p50_ms\": %.0f,"
              + " \"open_max_ms\": %.0f, \"steps\": %d, \"step_p50_ms\": %.1f,"
              + " \"step_p99_ms\": %.1f, \"docker_exec_cli_p50_ms\": %.1f,"
              + " \"docker_exec_cli_p99_ms\": %.1f, \"files\": %d, \"put_1mib_p50_ms\": %.1f,"
              + " \"put_get_1mib_p50_ms\": %.1f, \"put_get_1mib_p99_ms\": %.1f,"
              + " \"loadavg_before\": \"%s\", \"loadavg_after\": \"%s\"}%n",
          runtime,
          open.size(),
          percentile(open, 50),
          percentile(open, 100),
          step.size(),
          percentile(step, 50),
          percentile(step, 99),
          percentile(cli, 50),
          percentile(cli, 99),
          both.size(),
          percentile(put, 50),
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
