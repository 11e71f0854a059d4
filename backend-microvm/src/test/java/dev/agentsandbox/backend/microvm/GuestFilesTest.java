package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class GuestFilesTest {
  /** Runs {@code sh -c script} on this host and returns its standard output. */
  private static String sh(String script) throws Exception {
    Process process = new ProcessBuilder("sh", "-c", script).start();
    String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.waitFor(10, TimeUnit.SECONDS)).isTrue();
    return out;
  }

  @ParameterizedTest(name = "an argument survives the guest's eval: {0}")
  @ValueSource(
      strings = {
        "plain",
        "two words",
        "it's",
        "'",
        "''",
        "$(touch /tmp/pwned)",
        "`id`",
        "a\nb",
        "\\",
        "*",
        "-c",
        ""
      })
  void quotingKeepsEveryArgumentAsItIs(String argument) throws Exception {
    java.nio.file.Path argv = java.nio.file.Files.createTempFile("argv", "");
    try {
      java.nio.file.Files.writeString(
          argv, GuestFiles.quote(argument) + " " + GuestFiles.quote("x"));
      // Exactly what the guest init does with /asb/argv.
      String out =
          sh("eval \"set -- $(cat " + argv + ")\"; printf '%s|%s|%s' \"$#\" \"$1\" \"$2\"");
      assertThat(out).isEqualTo("2|" + argument + "|x");
    } finally {
      java.nio.file.Files.delete(argv);
    }
  }

  @Test
  void theRunArchiveHoldsTheThreeFilesTheInitReads() {
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put("ASB_ADDRESS", "10.213.0.2");
    byte[] archive =
        GuestFiles.runArchive(settings, List.of("echo", "hi there"), Map.of("K", "v w"));
    String text = new String(archive, StandardCharsets.ISO_8859_1);
    assertThat(text)
        .startsWith("070701")
        .contains("asb/run.env\0")
        .contains("ASB_ADDRESS='10.213.0.2'\n")
        .contains("asb/argv\0")
        .contains("'echo' 'hi there' ")
        .contains("asb/envv\0")
        .contains("'K=v w' ")
        .contains("TRAILER!!!");
  }

  @Test
  void cpioEntriesAreFourByteAlignedAndSizedInTheirHeader() {
    byte[] archive = new Cpio().file("a", 0644, "xyz".getBytes(StandardCharsets.UTF_8)).finish();
    String text = new String(archive, StandardCharsets.ISO_8859_1);
    // header (110) + "a\0" (2) padded to 112, then 3 bytes of data padded to 116.
    assertThat(text.substring(54, 62)).isEqualTo("00000003");
    assertThat(text.substring(112, 115)).isEqualTo("xyz");
    assertThat(text.substring(116, 122)).isEqualTo("070701");
    assertThat(archive.length % 4).isZero();
  }

  /**
   * Issue 26: the initramfs holding a run's credentials was written 0644 and narrowed after. A
   * watcher that stats the file from the moment it appears, while 64 MiB are written into it, must
   * never see it readable by group or others.
   */
  @Test
  void aPrivateFileIsNeverReadableByOthersFromItsFirstByte(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    java.nio.file.Path file = dir.resolve("initramfs.cpio");
    java.util.Set<java.util.Set<java.nio.file.attribute.PosixFilePermission>> seen =
        java.util.concurrent.ConcurrentHashMap.newKeySet();
    java.util.concurrent.atomic.AtomicBoolean done =
        new java.util.concurrent.atomic.AtomicBoolean();
    Thread watcher =
        Thread.ofPlatform()
            .start(
                () -> {
                  long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                  while (!done.get() && System.nanoTime() < until) {
                    try {
                      seen.add(
                          java.nio.file.Files.readAttributes(
                                  file,
                                  java.nio.file.attribute.PosixFileAttributes.class,
                                  java.nio.file.LinkOption.NOFOLLOW_LINKS)
                              .permissions());
                    } catch (java.io.IOException notYet) {
                      Thread.onSpinWait();
                    }
                  }
                });
    int uid = (Integer) java.nio.file.Files.getAttribute(dir, "unix:uid");
    GuestFiles.writePrivate(file, new byte[64 << 20], uid);
    done.set(true);
    watcher.join(60_000);
    assertThat(seen).as("the modes the watcher saw").isNotEmpty();
    for (java.util.Set<java.nio.file.attribute.PosixFilePermission> permissions : seen) {
      assertThat(java.nio.file.attribute.PosixFilePermissions.toString(permissions))
          .as("a mode the file had while it was written")
          .matches("r[w-]-------");
    }
    assertThat(
            java.nio.file.attribute.PosixFilePermissions.toString(
                java.nio.file.Files.getPosixFilePermissions(file)))
        .isEqualTo("r--------");
  }

  @Test
  void aPrivateFileIsNeverWrittenThroughALinkPlantedInItsPlace(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    java.nio.file.Path victim = java.nio.file.Files.writeString(dir.resolve("victim"), "keep");
    java.nio.file.Path file = dir.resolve("initramfs.cpio");
    java.nio.file.Files.createSymbolicLink(file, victim);
    int uid = (Integer) java.nio.file.Files.getAttribute(dir, "unix:uid");
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> GuestFiles.writePrivate(file, "secret".getBytes(StandardCharsets.UTF_8), uid))
        .isInstanceOf(java.nio.file.FileAlreadyExistsException.class);
    assertThat(java.nio.file.Files.readString(victim)).isEqualTo("keep");
  }
}
