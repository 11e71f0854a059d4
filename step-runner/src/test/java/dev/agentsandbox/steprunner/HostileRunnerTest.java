package dev.agentsandbox.steprunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.ByteArrayOutputStream;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The host reading a hostile runner: each row is a guest that lies or floods, and each must end the
 * session as failed without the host holding more than a frame, writing outside what was asked, or
 * waiting forever.
 */
class HostileRunnerTest {
  private static final java.util.concurrent.ExecutorService ASYNC =
      java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor();

  private final BlockingQueue<Frame> sent = new LinkedBlockingQueue<>();
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final RunnerClient client =
      new RunnerClient(
          "a hostile guest",
          bytes -> {
            FrameDecoderForHost.decode(bytes, sent);
          },
          violations::add);

  private void guest(FrameType type, int id, byte[] payload) {
    byte[] bytes = new Frame(type, id, payload).encode();
    client.receive(bytes, 0, bytes.length);
  }

  private void hello() throws Exception {
    guest(FrameType.HELLO, 0, new Payload.Writer().u32(2).u32(1).u32(8).u32(65536).done());
    client.awaitReady(java.time.Duration.ofSeconds(1));
  }

  private Frame hostSent(FrameType type) throws Exception {
    for (; ; ) {
      Frame frame = sent.poll(5, TimeUnit.SECONDS);
      assertThat(frame).as("the host sent " + type).isNotNull();
      if (frame.type() == type) {
        return frame;
      }
    }
  }

  private static byte[] u64(long value) {
    return new Payload.Writer().u64(value).done();
  }

  private static byte[] info(int kind, long size, String name) {
    return new Payload.Writer().u32(kind).u64(size).u32(0644).u64(0).u32(0).str(name).done();
  }

  @Test
  void aFrameLargerThanTheLimitFailsTheSessionBeforeItsPayloadIsRead() throws Exception {
    hello();
    byte[] header = {0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x42, 0, 0, 0, 1};
    client.receive(header, 0, header.length);
    assertThat(violations).singleElement().asString().contains("over the limit of 65536");
    assertThat(client.endedBecause()).isPresent();
  }

  @Test
  void unknownTypesUnopenedChannelsAndEarlyFramesFailTheSession() throws Exception {
    Map<String, Function<RunnerClient, byte[]>> rows =
        Map.of(
            "an unknown type", c -> new byte[] {0, 0, 0, 0, 0x66, 0, 0, 0, 1},
            "a type only the host sends",
                c -> new byte[] {0, 0, 0, 0, (byte) FrameType.EXEC.code, 0, 0, 0, 1},
            "output for a channel never opened",
                c -> new Frame(FrameType.STDOUT, 99, new byte[] {1}).encode());
    for (Map.Entry<String, Function<RunnerClient, byte[]>> row : rows.entrySet()) {
      List<String> seen = new CopyOnWriteArrayList<>();
      RunnerClient fresh = new RunnerClient("row", bytes -> {}, seen::add);
      byte[] greeting =
          new Frame(FrameType.HELLO, 0, new Payload.Writer().u32(2).u32(0).u32(8).u32(65536).done())
              .encode();
      fresh.receive(greeting, 0, greeting.length);
      byte[] bad = row.getValue().apply(fresh);
      fresh.receive(bad, 0, bad.length);
      assertThat(seen).as(row.getKey()).hasSize(1);
    }
  }

  @Test
  void aStepsOutputBeforeItStartedOrAfterItEndedFailsTheSession() throws Exception {
    hello();
    CompletableFuture<StepEnd> end = new CompletableFuture<>();
    Thread.ofPlatform()
        .start(
            () -> {
              try {
                var step =
                    client.exec(
                        new StepSpec(1, List.of("true"), Map.of(), WorkspacePath.root(), null),
                        new Recording());
                end.complete(step.awaitEnd(Instant.now().plusSeconds(10)).orElseThrow());
              } catch (RuntimeException | InterruptedException e) {
                end.completeExceptionally(e);
              }
            });
    Frame exec = hostSent(FrameType.STDIN_END);
    guest(FrameType.STDOUT, exec.id(), new byte[] {'x'});
    assertThat(violations).singleElement().asString().contains("before the step started");
    assertThatThrownBy(() -> end.get(10, TimeUnit.SECONDS))
        .hasCauseInstanceOf(UnableToRunStepException.class);
  }

  @Test
  void aReadThatSendsMoreThanItsSizeFailsAndWritesNoMoreThanTheSize() throws Exception {
    hello();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    CompletableFuture<Void> read =
        CompletableFuture.runAsync(
            () -> client.files().readFile(WorkspacePath.parse("f"), out, 10), ASYNC);
    Frame request = hostSent(FrameType.READ);
    guest(FrameType.SIZE, request.id(), u64(4));
    guest(
        FrameType.DATA, request.id(), "abcd".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    guest(
        FrameType.DATA, request.id(), "efgh".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    guest(FrameType.END, request.id(), u64(8));
    assertThatThrownBy(() -> read.get(10, TimeUnit.SECONDS))
        .hasCauseInstanceOf(UnableToRunStepException.class)
        .hasMessageContaining("more than the size it announced");
    assertThat(out.size()).isLessThanOrEqualTo(4);
    assertThat(violations).hasSize(1);
  }

  @Test
  void aReadWhoseSizeIsOverTheCapFails() throws Exception {
    hello();
    CompletableFuture<Void> read =
        CompletableFuture.runAsync(
            () ->
                client.files().readFile(WorkspacePath.parse("f"), new ByteArrayOutputStream(), 10),
            ASYNC);
    Frame request = hostSent(FrameType.READ);
    guest(FrameType.SIZE, request.id(), u64(11));
    assertThatThrownBy(() -> read.get(10, TimeUnit.SECONDS))
        .hasMessageContaining("over the cap of 10");
  }

  @Test
  void aWalkEntryThatEscapesIsRefusedAndNeverReachesTheTar() throws Exception {
    for (String name :
        List.of("../etc/passwd", "/etc/passwd", "a/../../b", "a//b", "ok/\u0001", "")) {
      HostileRunnerTest row = new HostileRunnerTest();
      row.hello();
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      CompletableFuture<List<String>> walk =
          CompletableFuture.supplyAsync(
              () -> row.client.files().readFolder(WorkspacePath.root(), out, 100), ASYNC);
      Frame request = row.hostSent(FrameType.WALK);
      row.guest(FrameType.SIZE, request.id(), u64(1));
      row.guest(FrameType.INFO, request.id(), info(1, 1, name));
      assertThatThrownBy(() -> walk.get(10, TimeUnit.SECONDS))
          .as(name)
          .hasCauseInstanceOf(UnableToRunStepException.class);
      assertThat(out.toString(java.nio.charset.StandardCharsets.ISO_8859_1))
          .as(name)
          .doesNotContain("passwd");
      assertThat(row.violations).as(name).hasSize(1);
    }
  }

  @Test
  void aWalkThatLiesAboutAFilesSizeFails() throws Exception {
    hello();
    CompletableFuture<List<String>> walk =
        CompletableFuture.supplyAsync(
            () -> client.files().readFolder(WorkspacePath.root(), new ByteArrayOutputStream(), 100),
            ASYNC);
    Frame request = hostSent(FrameType.WALK);
    guest(FrameType.SIZE, request.id(), u64(3));
    guest(FrameType.INFO, request.id(), info(1, 3, "a"));
    guest(FrameType.DATA, request.id(), new byte[] {1, 2});
    guest(FrameType.INFO, request.id(), info(1, 1, "b"));
    assertThatThrownBy(() -> walk.get(10, TimeUnit.SECONDS))
        .hasMessageContaining("before a file's end");
  }

  @Test
  void aTransferThatFloodsPastItsCreditFailsWithoutGrowingTheHost() throws Exception {
    hello();
    CompletableFuture<Void> read =
        CompletableFuture.runAsync(
            () -> {
              // A reader that never drains: the guest floods regardless of credit.
              client
                  .files()
                  .readFile(
                      WorkspacePath.parse("f"),
                      new java.io.OutputStream() {
                        @Override
                        public void write(int b) {
                          sleepForever();
                        }

                        @Override
                        public void write(byte[] b, int off, int len) {
                          sleepForever();
                        }
                      },
                      Long.MAX_VALUE / 2);
            },
            ASYNC);
    Frame request = hostSent(FrameType.READ);
    guest(FrameType.SIZE, request.id(), u64(1L << 40));
    byte[] chunk = new byte[Frame.MAX_PAYLOAD];
    int frames = 0;
    while (violations.isEmpty() && frames < 1000) {
      guest(FrameType.DATA, request.id(), chunk);
      frames++;
    }
    assertThat(violations).singleElement().asString().contains("past the credit");
    // 1 MiB of credit covers 15 full frames; the 16th broke it.
    assertThat(frames).isEqualTo(Transfer.WINDOW / (Frame.MAX_PAYLOAD + Transfer.FRAME_COST) + 1);
    read.cancel(true);
  }

  @Test
  void aListingOutOfOrderOrWithASlashFails() throws Exception {
    for (List<String> names :
        List.of(List.of("b", "a"), List.of("a", "a"), List.of("x/y"), List.of(".."))) {
      HostileRunnerTest row = new HostileRunnerTest();
      row.hello();
      CompletableFuture<?> list =
          CompletableFuture.supplyAsync(
              () -> row.client.files().list(WorkspacePath.root(), 10), ASYNC);
      Frame request = row.hostSent(FrameType.LIST);
      for (String name : names) {
        row.guest(FrameType.INFO, request.id(), info(1, 0, name));
      }
      row.guest(FrameType.END, request.id(), u64(0));
      assertThatThrownBy(() -> list.get(10, TimeUnit.SECONDS))
          .as(names.toString())
          .hasCauseInstanceOf(UnableToRunStepException.class);
    }
  }

  @Test
  void moreListedEntriesThanAskedForFail() throws Exception {
    hello();
    CompletableFuture<?> list =
        CompletableFuture.supplyAsync(() -> client.files().list(WorkspacePath.root(), 2), ASYNC);
    Frame request = hostSent(FrameType.LIST);
    for (String name : List.of("a", "b", "c")) {
      guest(FrameType.INFO, request.id(), info(1, 0, name));
    }
    assertThat(violations).singleElement().asString().contains("more entries than the 2 asked for");
    assertThatThrownBy(() -> list.get(10, TimeUnit.SECONDS))
        .hasCauseInstanceOf(UnableToRunStepException.class);
  }

  @Test
  void anImpossibleExitStatusFails() throws Exception {
    StepEnd ended =
        endAfterExited(new Payload.Writer().u32(1).u32(200).u32(0).u32(0).u32(0).done());
    assertThat(ended.end()).isEqualTo(StepEnd.End.ERROR);
    assertThat(violations).singleElement().asString().contains("impossible exit status");
  }

  @Test
  void aCountTheRunnerCouldNotReadIsUnknownNotZero() throws Exception {
    StepEnd ended =
        endAfterExited(
            new Payload.Writer().u32(0).u32(0).u32(0).u32(0xffffffffL).u32(0xffffffffL).done());
    assertThat(ended.exitStatus()).hasValue(0);
    assertThat(ended.connectionsOpened()).isEmpty();
    assertThat(violations).isEmpty();
  }

  @Test
  void anImpossibleConnectionCountFails() throws Exception {
    StepEnd ended =
        endAfterExited(new Payload.Writer().u32(0).u32(0).u32(0).u32(0x80000000L).u32(0).done());
    assertThat(ended.end()).isEqualTo(StepEnd.End.ERROR);
    assertThat(violations).singleElement().asString().contains("impossible count of connections");
  }

  /** A step started on a greeted client whose runner then sends EXITED with {@code payload}. */
  private StepEnd endAfterExited(byte[] payload) throws Exception {
    hello();
    CompletableFuture<StepEnd> end =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return client
                    .exec(
                        new StepSpec(1, List.of("true"), Map.of(), WorkspacePath.root(), null),
                        new Recording())
                    .awaitEnd(Instant.now().plusSeconds(10))
                    .orElseThrow();
              } catch (InterruptedException e) {
                throw new IllegalStateException(e);
              }
            },
            ASYNC);
    Frame exec = hostSent(FrameType.STDIN_END);
    guest(FrameType.STARTED, exec.id(), new Payload.Writer().u32(42).done());
    guest(FrameType.EXITED, exec.id(), payload);
    return end.get(10, TimeUnit.SECONDS);
  }

  private static void sleepForever() {
    try {
      Thread.sleep(Long.MAX_VALUE);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Decodes what the host wrote, for the rows that answer it. */
  static final class FrameDecoderForHost {
    static void decode(byte[] bytes, BlockingQueue<Frame> into) {
      int length =
          (bytes[0] & 0xff) << 24
              | (bytes[1] & 0xff) << 16
              | (bytes[2] & 0xff) << 8
              | (bytes[3] & 0xff);
      int code = bytes[4] & 0xff;
      int id =
          (bytes[5] & 0xff) << 24
              | (bytes[6] & 0xff) << 16
              | (bytes[7] & 0xff) << 8
              | (bytes[8] & 0xff);
      FrameType type =
          java.util.Arrays.stream(FrameType.values())
              .filter(t -> t.code == code)
              .findFirst()
              .orElseThrow();
      into.add(new Frame(type, id, java.util.Arrays.copyOfRange(bytes, 9, 9 + length)));
    }
  }
}
