package dev.agentsandbox.steprunner;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Malformed frames from the host's side: the runner names the problem in a FATAL frame and stops
 * (exit status 2) rather than guessing; the client reports that as the session's failure.
 */
class StepRunnerHostFramesTest {
  @TempDir Path dir;

  private static byte[] header(long length, int type, int id) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    out.writeInt((int) length);
    out.writeByte(type);
    out.writeInt(id);
    return bytes.toByteArray();
  }

  private static byte[] frame(int type, int id, byte[] payload) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    bytes.write(header(payload.length, type, id));
    bytes.write(payload);
    return bytes.toByteArray();
  }

  @Test
  void malformedFramesStopTheRunnerWithAReason() throws Exception {
    Map<String, byte[]> rows = new TreeMap<>();
    rows.put("a frame larger than 64 KiB", header(65537, FrameType.STAT.code, 1));
    rows.put("an unknown type", frame(0x33, 1, new byte[0]));
    rows.put("a type only the runner sends", frame(FrameType.STDOUT.code, 1, new byte[0]));
    rows.put(
        "a path count past the payload", frame(FrameType.STAT.code, 1, new byte[] {0, 0, 0, 5}));
    rows.put(
        "a .. segment",
        frame(FrameType.STAT.code, 1, new Payload.Writer().u32(1).str("..").done()));
    rows.put(
        "a segment with a slash",
        frame(FrameType.MKDIR.code, 1, new Payload.Writer().u32(1).str("a/b").done()));
    rows.put(
        "an exec with no command",
        frame(FrameType.EXEC.code, 1, new Payload.Writer().u32(0).done()));
    rows.put(
        "an environment pair without =",
        frame(
            FrameType.EXEC.code,
            1,
            new Payload.Writer().u32(1).str("true").u32(1).str("NOEQUALS").u32(0).done()));
    int row = 0;
    for (Map.Entry<String, byte[]> entry : rows.entrySet()) {
      try (LocalRunner runner = LocalRunner.start(dir.resolve("row" + row++))) {
        runner.writeRaw(entry.getValue());
        assertThat(runner.process.waitFor(10, TimeUnit.SECONDS)).as(entry.getKey()).isTrue();
        assertThat(runner.process.exitValue()).as(entry.getKey()).isEqualTo(2);
        Awaitility.await()
            .atMost(java.time.Duration.ofSeconds(5))
            .until(() -> !runner.violations.isEmpty());
        assertThat(runner.violations)
            .as(entry.getKey())
            .singleElement()
            .asString()
            .startsWith("the step runner stopped:");
      }
    }
  }
}
