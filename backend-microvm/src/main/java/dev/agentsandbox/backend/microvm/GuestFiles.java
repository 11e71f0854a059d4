package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.SandboxException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The files a guest boots from: the base initramfs (busybox, the virtio modules, the guest init),
 * built once and cached by the hash of what goes into it; the per-run archive appended to it; and
 * the read-only root disk made from the agent's image, cached by image id and shared by every run
 * of that image. Thread-safe: builds of the same artifact are serialized.
 */
final class GuestFiles {
  /** Bumped when the root disk's layout changes, so old cached disks are not reused. */
  private static final String DISK_FORMAT = "v2";

  /** The virtio drivers the guest needs, in load order (each after what it depends on). */
  static final List<String> MODULES =
      List.of(
          "virtio_ring",
          "virtio",
          "virtio_mmio",
          "virtio_blk",
          "failover",
          "net_failover",
          "virtio_net",
          "virtio_console");

  private final MicroVmConfig config;
  private final HostCommands host;
  private final Object lock = new Object();

  GuestFiles(MicroVmConfig config, HostCommands host) {
    this.config = config;
    this.host = host;
  }

  /** The guest init script shipped in this module. */
  static byte[] initScript() {
    try (InputStream in = GuestFiles.class.getResourceAsStream("guest-init.sh")) {
      if (in == null) {
        throw new IllegalStateException("guest-init.sh is missing from the backend's jar");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The base initramfs, built on first use. */
  Path baseInitramfs() {
    try {
      byte[] init = initScript();
      byte[] busybox = Files.readAllBytes(config.busybox());
      byte[] runner = dev.agentsandbox.steprunner.RunnerBinary.bytes();
      MessageDigest digest = MessageDigest.getInstance("SHA-256");
      digest.update(init);
      digest.update(busybox);
      digest.update(runner);
      byte[][] modules = new byte[MODULES.size()][];
      for (int i = 0; i < MODULES.size(); i++) {
        Path module = config.modules().resolve(MODULES.get(i) + ".ko");
        modules[i] = Files.readAllBytes(module);
        digest.update(modules[i]);
      }
      String key = HexFormat.of().formatHex(digest.digest()).substring(0, 16);
      Path target = config.cacheDir().resolve("initramfs-" + key + ".cpio");
      synchronized (lock) {
        if (Files.exists(target)) {
          return target;
        }
        Cpio cpio = new Cpio();
        for (String dir :
            List.of("bin", "dev", "proc", "sys", "newroot", "lib", "lib/modules", "asb")) {
          cpio.directory(dir, 0755);
        }
        cpio.charDevice("dev/console", 0600, 5, 1);
        cpio.file("init", 0755, init);
        cpio.file("bin/busybox", 0755, busybox);
        // A session's step runner (docs/step-runner.md); the init starts it instead of a command.
        cpio.file("bin/" + dev.agentsandbox.steprunner.RunnerBinary.NAME, 0755, runner);
        for (String applet : applets()) {
          if (!applet.equals("busybox")) {
            cpio.symlink("bin/" + applet, "busybox");
          }
        }
        for (int i = 0; i < MODULES.size(); i++) {
          cpio.file("lib/modules/" + MODULES.get(i) + ".ko", 0644, modules[i]);
        }
        byte[] archive = cpio.finish();
        // The kernel finds a second archive only at a 512-byte boundary after the first.
        int padded = (archive.length + 511) / 512 * 512;
        byte[] bytes = java.util.Arrays.copyOf(archive, padded);
        writeAtomically(target, bytes);
        return target;
      }
    } catch (IOException e) {
      throw new SandboxException(
          "building the guest's base initramfs from "
              + config.busybox()
              + " and "
              + config.modules()
              + ": "
              + e
              + " (scripts/install-host.sh installs busybox-static and the guest kernel)",
          e);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private List<String> applets() {
    String list = host.check(List.of(config.busybox().toString(), "--list"), null);
    return list.lines().map(String::strip).filter(s -> s.matches("[a-z0-9_.\\[-]+")).toList();
  }

  /** The run's archive without credentials (the KVM probe's). */
  static byte[] runArchive(
      Map<String, String> settings, List<String> argv, Map<String, String> env) {
    return runArchive(settings, argv, env, List.of());
  }

  /**
   * The run's archive appended to the base initramfs: {@code /asb/run.env}, {@code /asb/argv},
   * {@code /asb/envv} and one file per credential in {@code /asb/credentials/}, all readable by the
   * guest's root alone; the init copies the credentials onto the workload's tmpfs and deletes them
   * here.
   */
  static byte[] runArchive(
      Map<String, String> settings,
      List<String> argv,
      Map<String, String> env,
      List<RunCredential> credentials) {
    return runArchive(settings, argv, env, credentials, java.util.Optional.empty());
  }

  /**
   * The run's archive with, when the run inspects hosts, its proxy's CA certificate ({@code
   * /asb/trust/run-ca.pem}) and the Java trust store made from it ({@code
   * /asb/trust/ca-bundle.p12}); the init joins the certificate to the image's own bundle under
   * {@code /run/agent-sandbox/trust} ({@link dev.agentsandbox.backend.RunTrust}).
   */
  static byte[] runArchive(
      Map<String, String> settings,
      List<String> argv,
      Map<String, String> env,
      List<RunCredential> credentials,
      java.util.Optional<String> runCaPem) {
    StringBuilder runEnv = new StringBuilder();
    settings.forEach((k, v) -> runEnv.append(k).append('=').append(quote(v)).append('\n'));
    StringBuilder args = new StringBuilder();
    for (String arg : argv) {
      args.append(quote(arg)).append(' ');
    }
    StringBuilder envv = new StringBuilder();
    env.forEach((k, v) -> envv.append(quote(k + "=" + v)).append(' '));
    Cpio cpio =
        new Cpio()
            .file("asb/run.env", 0600, runEnv.toString().getBytes(StandardCharsets.UTF_8))
            .file("asb/argv", 0600, args.toString().getBytes(StandardCharsets.UTF_8))
            .file("asb/envv", 0600, envv.toString().getBytes(StandardCharsets.UTF_8))
            .directory("asb/credentials", 0700);
    for (RunCredential credential : credentials) {
      cpio.file(
          "asb/credentials/" + credential.name(),
          0400,
          credential.value().getBytes(StandardCharsets.UTF_8));
    }
    if (runCaPem.isPresent()) {
      cpio.directory("asb/trust", 0700)
          .file("asb/trust/run-ca.pem", 0444, runCaPem.get().getBytes(StandardCharsets.US_ASCII))
          .file(
              "asb/trust/ca-bundle.p12",
              0444,
              dev.agentsandbox.backend.RunTrust.javaTrustStore(runCaPem.get()));
    }
    return cpio.finish();
  }

  /** Single-quotes a value for sh: nothing inside single quotes is special but the quote itself. */
  static String quote(String value) {
    return "'" + value.replace("'", "'\\''") + "'";
  }

  /** The image's id as the local Docker engine knows it ({@code sha256:...}). */
  String imageId(String image) {
    HostCommands.Result result =
        host.run(List.of("docker", "image", "inspect", "--format", "{{.Id}}", image), null);
    if (!result.ok()) {
      throw new SandboxException(
          "looking up image "
              + image
              + " in the local Docker engine: "
              + HostCommands.truncate(result.stderr().strip())
              + " (build or pull it first; images/build.sh builds the project's own)");
    }
    return result.stdout().strip();
  }

  /** Where the root disk of an image id is cached. */
  Path rootDiskPath(String imageId) {
    String hex = imageId.replaceFirst("^sha256:", "");
    if (!hex.matches("[0-9a-f]{64}")) {
      throw new SandboxException("image id " + imageId + " is not a sha256 digest");
    }
    return config.cacheDir().resolve("rootfs-" + DISK_FORMAT + "-" + hex + ".ext4");
  }

  /**
   * The image's read-only root disk, made on first use: {@code docker export} of a container
   * created (never started) from it, plus the mount points the guest needs, into an ext4 file
   * system without a journal.
   */
  Path rootDisk(String image) {
    String imageId = imageId(image);
    Path target = rootDiskPath(imageId);
    synchronized (lock) {
      if (Files.exists(target)) {
        return target;
      }
      Path work = null;
      String container = null;
      try {
        Files.createDirectories(config.cacheDir());
        work = Files.createTempDirectory(config.cacheDir(), "build-");
        Path tar = work.resolve("image.tar");
        Path tree = work.resolve("tree");
        Files.createDirectory(tree);
        container = host.check(List.of("docker", "create", imageId, "/"), null).strip();
        host.check(List.of("docker", "export", "--output", tar.toString(), container), null);
        host.check(
            List.of(
                "tar",
                "--extract",
                "--numeric-owner",
                "--file",
                tar.toString(),
                "-C",
                tree.toString()),
            null);
        Files.delete(tar);
        for (String dir : List.of("workspace", "tmp", "proc", "dev", "run")) {
          Path mountPoint = tree.resolve(dir);
          if (!Files.isDirectory(mountPoint, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            Files.deleteIfExists(mountPoint);
            Files.createDirectory(mountPoint);
          }
        }
        long bytes = treeSize(tree);
        long megabytes = bytes * 13 / 10 / (1024 * 1024) + 32;
        Path disk = work.resolve("disk.ext4");
        host.check(
            List.of(
                "mkfs.ext4",
                "-q",
                "-F",
                "-O",
                "^has_journal",
                "-i",
                "8192",
                "-L",
                "asb-root",
                "-d",
                tree.toString(),
                disk.toString(),
                megabytes + "M"),
            null);
        Files.setPosixFilePermissions(disk, PosixFilePermissions.fromString("rw-r--r--"));
        Files.move(disk, target, StandardCopyOption.ATOMIC_MOVE);
        return target;
      } catch (IOException | RuntimeException e) {
        throw new SandboxException(
            "making the root disk of image " + image + " (" + imageId + "): " + e.getMessage(), e);
      } finally {
        if (container != null) {
          host.run(List.of("docker", "rm", "--force", container), null);
        }
        if (work != null) {
          deleteTree(work);
        }
      }
    }
  }

  private static long treeSize(Path tree) throws IOException {
    try (Stream<Path> files = Files.walk(tree)) {
      return files
          .filter(p -> Files.isRegularFile(p, java.nio.file.LinkOption.NOFOLLOW_LINKS))
          .mapToLong(
              p -> {
                try {
                  return Files.size(p) + 4096;
                } catch (IOException e) {
                  return 4096;
                }
              })
          .sum();
    }
  }

  static void deleteTree(Path root) {
    if (!Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> files = Files.walk(root)) {
      for (Path path : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("deleting " + root, e);
    }
  }

  static void writeAtomically(Path target, byte[] bytes) throws IOException {
    Files.createDirectories(target.getParent());
    Path tmp = Files.createTempFile(target.getParent(), ".tmp-", "");
    Files.write(tmp, bytes);
    Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-r--r--"));
    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
  }

  /**
   * Writes a file only {@code uid} may read, private from its first byte: created new (never
   * through an existing file or link) with mode 0600 as root's, filled, then given to {@code uid}
   * and made 0400. Writing it first and narrowing its mode after would leave it readable, under the
   * usual umask, by every local user for as long as the write takes (issue 26: the run's initramfs,
   * which holds its environment and credentials).
   */
  static void writePrivate(Path file, byte[] bytes, int uid) throws IOException {
    try (java.nio.channels.FileChannel channel =
        java.nio.channels.FileChannel.open(
            file,
            java.util.EnumSet.of(
                java.nio.file.StandardOpenOption.CREATE_NEW,
                java.nio.file.StandardOpenOption.WRITE),
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
      java.nio.ByteBuffer buffer = java.nio.ByteBuffer.wrap(bytes);
      while (buffer.hasRemaining()) {
        channel.write(buffer);
      }
    }
    Files.setAttribute(file, "unix:uid", uid, java.nio.file.LinkOption.NOFOLLOW_LINKS);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--------"));
  }

  /**
   * The credentials the proxy injects, one file each, in a folder of the proxy's uid alone (0500,
   * files 0400): the guest's VMM uid cannot read them, and they go with the run's directory.
   */
  static void writeProxyCredentials(
      Path folder, List<dev.agentsandbox.backend.RunCredential> credentials, int proxyUid)
      throws IOException {
    Path dir =
        Files.createDirectory(
            folder,
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    for (var credential : credentials) {
      GuestFiles.writePrivate(
          dir.resolve(credential.name()),
          credential.value().getBytes(StandardCharsets.UTF_8),
          proxyUid);
    }
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("r-x------"));
    Files.setAttribute(dir, "unix:uid", proxyUid);
  }
}
