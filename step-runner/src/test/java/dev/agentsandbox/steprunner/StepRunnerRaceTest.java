package dev.agentsandbox.steprunner;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.PathRefusedException.Reason;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A link swapped in and out of a put's path while the put is in flight (the docker cp class,
 * CVE-2018-15664): every put either lands inside the workspace or is refused, and nothing is ever
 * written through the link. Bounded in rounds and in time.
 */
class StepRunnerRaceTest {
  private static final int ROUNDS = 300;
  private static final Duration AT_MOST = Duration.ofSeconds(60);

  @TempDir Path dir;

  /**
   * Moves {@code from} to {@code to}; a put may have made {@code to} as a missing parent in the
   * moment it was gone, and that folder (with what landed in it) is moved aside first.
   */
  private static int moveIn(Path from, Path to, Path ws, int aside) throws java.io.IOException {
    try {
      Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
      return aside;
    } catch (java.io.IOException e) {
      Files.move(to, ws.resolve("made-" + aside), StandardCopyOption.ATOMIC_MOVE);
      Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
      return aside + 1;
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"openat2", "walk"})
  void aLinkSwappedInDuringPutsIsNeverFollowed(String mode) throws Exception {
    try (LocalRunner runner =
        mode.equals("openat2") ? LocalRunner.start(dir) : LocalRunner.start(dir, "--no-openat2")) {
      Path ws = runner.workspace;
      Path outside = Files.createDirectories(dir.resolve("outside"));
      Path real = Files.createDirectories(ws.resolve("d"));
      Path parked = ws.resolve("d.real");
      Path link = ws.resolve("d.link");
      AtomicBoolean racing = new AtomicBoolean(true);
      Thread swapper =
          Thread.ofPlatform()
              .start(
                  () -> {
                    Instant until = Instant.now().plus(AT_MOST);
                    int aside = 0;
                    try {
                      while (racing.get() && Instant.now().isBefore(until)) {
                        Files.move(real, parked, StandardCopyOption.ATOMIC_MOVE);
                        Files.createSymbolicLink(link, outside);
                        aside = moveIn(link, real, ws, aside);
                        Thread.onSpinWait();
                        Files.delete(real);
                        aside = moveIn(parked, real, ws, aside);
                      }
                    } catch (java.io.IOException e) {
                      throw new java.io.UncheckedIOException(e);
                    }
                  });
      Map<Reason, Integer> refused = new EnumMap<>(Reason.class);
      int landed = 0;
      Instant until = Instant.now().plus(AT_MOST);
      try {
        for (int round = 0; round < ROUNDS && Instant.now().isBefore(until); round++) {
          // Content in several frames, so the swap can happen between open and rename.
          InputStream content = new ByteArrayInputStream(new byte[3 * Frame.MAX_PAYLOAD]);
          try {
            runner.client.files().putFile(WorkspacePath.parse("d/f" + round), content, 1 << 20);
            landed++;
          } catch (PathRefusedException e) {
            refused.merge(e.reason(), 1, Integer::sum);
          }
        }
      } finally {
        racing.set(false);
        swapper.join(AT_MOST.toMillis());
      }
      try (Stream<Path> through = Files.list(outside)) {
        assertThat(through).as("files written through the link").isEmpty();
      }
      assertThat(refused.keySet()).as("refusals").isSubsetOf(Reason.SYMLINK, Reason.NOT_FOUND);
      try (Stream<Path> inside = Files.walk(ws)) {
        assertThat(inside.filter(f -> f.getFileName().toString().matches("f[0-9]+")).count())
            .as("puts that landed inside")
            .isEqualTo(landed);
      }
      System.out.printf("race (%s): %d landed, refused %s%n", mode, landed, refused);
      assertThat(runner.violations).isEmpty();
    }
  }
}
