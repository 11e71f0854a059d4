package dev.agentsandbox.backend.docker;

import dev.agentsandbox.steprunner.RunnerBinary;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * Where a session's step runner ({@code asb-step-runner}, docs/step-runner.md) lives in the
 * workload container and how it is started there. The static binary is copied, before the container
 * starts, into a volume of its own mounted at {@link #DIR}: owned by root, mode 0555 in a
 * root-owned 0755 folder, so the workload's user (never root, no capabilities) can run it but not
 * change it. The daemon copies it through the created container's view of that volume ({@code PUT
 * /containers/{id}/archive}), never through a path on the host. It is then started once per session
 * by the Engine API's exec, as the workload's user, with its standard input and output as the
 * framed channel ({@link RunnerChannel}); docs/backends/docker.md says why exec and not the
 * container's own process.
 */
final class SessionRunner {
  /** The runner's folder inside the workload container. */
  static final String DIR = "/run/asb-runner";

  /** The runner's path inside the workload container. */
  static final String PATH = DIR + "/" + RunnerBinary.NAME;

  /** How long the runner may take to greet the host once its exec started. */
  static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

  private static volatile byte[] archive;

  private SessionRunner() {}

  static String volumeName(String runId) {
    return "asb-" + runId + "-runner";
  }

  /**
   * The runner's volume, for an idle workload: the local driver's plain folder (not a tmpfs: a
   * tmpfs volume loses what was copied in as soon as no running container holds it, and the copy
   * happens before the workload starts). It holds the binary only, nothing of the run's.
   */
  static java.util.Optional<VolumeSpec> volume(
      boolean idle, String runId, Map<String, String> labels) {
    return idle
        ? java.util.Optional.of(new VolumeSpec(volumeName(runId), Map.of(), labels))
        : java.util.Optional.empty();
  }

  /**
   * The runner volume's mount. Writable as far as Docker knows, because the daemon refuses to copy
   * into a read-only mount; the file's owner and mode are what keep the workload from changing it.
   */
  static VolumeSpec.Mount mount(VolumeSpec volume) {
    return new VolumeSpec.Mount(volume.name(), DIR, false);
  }

  /** The workload's mounts: its workspace and credentials, and the runner's when it has one. */
  static List<VolumeSpec.Mount> mounts(
      VolumeSpec.Mount workspace,
      VolumeSpec.Mount credentials,
      java.util.Optional<VolumeSpec> runner) {
    List<VolumeSpec.Mount> mounts = new java.util.ArrayList<>(List.of(workspace, credentials));
    runner.ifPresent(v -> mounts.add(mount(v)));
    return mounts;
  }

  /** A run's deliveries, then the runner's when the workload has its volume. */
  static List<Delivery> deliveries(
      List<Delivery> run, java.util.Optional<VolumeSpec> runner, String agentName) {
    List<Delivery> deliveries = new java.util.ArrayList<>(run);
    runner.ifPresent(v -> deliveries.add(delivery(agentName)));
    return deliveries;
  }

  /** The binary, copied into the created workload container's mount of the runner volume. */
  static Delivery delivery(String agentName) {
    return new Delivery(
        Delivery.Through.WORKLOAD,
        DIR,
        archive(),
        "copying the step runner into workload container " + agentName);
  }

  /** The runner's command line in the workload container. */
  static List<String> command() {
    return List.of(PATH, "--workspace", dev.agentsandbox.backend.RunContract.WORKSPACE);
  }

  private static byte[] archive() {
    byte[] built = archive;
    if (built == null) {
      built = tar(RunnerBinary.bytes());
      archive = built;
    }
    return built;
  }

  private static byte[] tar(byte[] binary) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(binary.length + 2048);
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
      TarArchiveEntry entry = new TarArchiveEntry(RunnerBinary.NAME);
      entry.setMode(0100555);
      entry.setIds(0, 0);
      entry.setSize(binary.length);
      tar.putArchiveEntry(entry);
      tar.write(binary);
      tar.closeArchiveEntry();
      tar.finish();
    } catch (IOException e) {
      throw new UncheckedIOException("writing a tar to memory cannot fail", e);
    }
    return bytes.toByteArray();
  }
}
