package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.RunTrust;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * What a run that inspects hosts adds on Docker (docs/backends/docker.md, "Inspected hosts"): the
 * credentials the proxy injects reach the proxy's container alone, as a variable its image's
 * launcher turns into files on the proxy's own tmpfs; the run CA's certificate, which the proxy
 * prints once it runs, is joined to the workload image's own bundle (read from the created workload
 * container through the archive API) and copied, with the Java store, onto a tmpfs volume the
 * workload mounts read-only at {@link RunTrust#DIR}.
 */
final class DockerInspection {
  /** The proxy's credentials folder, on its {@code /tmp} tmpfs (images/build.sh makes it). */
  static final String PROXY_CREDENTIALS_DIR = "/tmp/proxy-credentials";

  /** The variable that carries them to the proxy image's launcher: a base64 tar. */
  static final String CREDENTIALS_ENV = "AGENT_SANDBOX_PROXY_CREDENTIALS";

  /** Where the proxy mounts the trust volume, writable: the daemon copies the files in there. */
  static final String PROXY_TRUST = FenceLayout.PROXY_HOLD + "/trust";

  /** The trust volume's size: a bundle and a Java store are a few hundred KiB. */
  static final int TRUST_MB = 4;

  private DockerInspection() {}

  /**
   * Refuses to lay out a run that inspects hosts on objects named after another id than its own: a
   * proxy-pool standby's proxy was started without the run's injected credentials or trust volume.
   */
  static void refuseStandby(RunSpec spec, String objectsId) {
    if (!spec.egress().inspect().isEmpty() && !objectsId.equals(spec.runId())) {
      throw new IllegalArgumentException(
          "laying out run "
              + spec.runId()
              + " on "
              + objectsId
              + ": the run inspects hosts, so it is built cold, never on a standby");
    }
  }

  /** The run's proxy container with its credentials and the trust volume, if the run needs them. */
  static ContainerSpec proxy(RunLayout layout, RunSpec spec, ContainerSpec base) {
    if (!layout.inspects()) {
      return base;
    }
    Map<String, String> env = new LinkedHashMap<>(base.env());
    Set<String> secret = new HashSet<>(base.secretEnvKeys());
    if (!spec.proxyCredentials().isEmpty()) {
      env.put(CREDENTIALS_ENV, credentialsTar(spec.proxyCredentials()));
      secret.add(CREDENTIALS_ENV);
    }
    List<VolumeSpec.Mount> mounts = new ArrayList<>(base.mounts());
    mounts.add(new VolumeSpec.Mount(layout.trustName(), PROXY_TRUST, false));
    return copy(base, env, secret, mounts);
  }

  /** The workload container with the trust folder and variables, if the run inspects. */
  static ContainerSpec agent(RunLayout layout, ContainerSpec base) {
    if (!layout.inspects()) {
      return base;
    }
    Map<String, String> env = new LinkedHashMap<>(base.env());
    env.putAll(RunTrust.environment());
    List<VolumeSpec.Mount> mounts = new ArrayList<>(base.mounts());
    mounts.add(new VolumeSpec.Mount(layout.trustName(), RunTrust.DIR, true));
    return copy(base, env, base.secretEnvKeys(), mounts);
  }

  private static ContainerSpec copy(
      ContainerSpec base,
      Map<String, String> env,
      Set<String> secret,
      List<VolumeSpec.Mount> mounts) {
    return new ContainerSpec(
        base.name(),
        base.image(),
        base.entrypoint(),
        base.command(),
        env,
        secret,
        base.user(),
        base.labels(),
        base.runtime(),
        base.network(),
        base.address(),
        base.tmpfs(),
        mounts,
        base.memoryBytes(),
        base.nanoCpus(),
        base.pidsLimit());
  }

  /**
   * The trust files as a {@link Delivery} through the proxy's writable mount of the trust volume
   * (the workload mounts it read-only): built once the workload container is created, since the
   * image's own bundle is read from it, and before it starts.
   *
   * @throws dev.agentsandbox.backend.SandboxException when the proxy announced no CA certificate
   */
  static Delivery trustDelivery(
      DockerClient client, String agentId, ProxyOutput proxyOutput, String step) {
    String caPem =
        proxyOutput
            .caCertificate()
            .orElseThrow(
                () ->
                    new dev.agentsandbox.backend.SandboxException(
                        "the proxy inspects hosts but announced no CA certificate before its"
                            + " ready line (is the proxy image older than inspection?"
                            + " images/build.sh proxy builds it)"));
    return new Delivery(
        Delivery.Through.PROXY, PROXY_TRUST, trustArchive(client, agentId, caPem), step);
  }

  /** One 0400 file per credential, as a base64 tar the launcher extracts with busybox. */
  static String credentialsTar(List<RunCredential> credentials) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
      for (RunCredential credential : credentials) {
        byte[] value = credential.value().getBytes(StandardCharsets.UTF_8);
        TarArchiveEntry entry = new TarArchiveEntry(credential.name());
        entry.setMode(0100400);
        entry.setSize(value.length);
        tar.putArchiveEntry(entry);
        tar.write(value);
        tar.closeArchiveEntry();
      }
      tar.finish();
    } catch (IOException e) {
      throw new UncheckedIOException("writing a tar to memory cannot fail", e);
    }
    return Base64.getEncoder().encodeToString(bytes.toByteArray());
  }

  /**
   * The trust files for the volume: the run CA, the workload image's own bundle (the first of
   * {@link RunTrust#IMAGE_BUNDLES} the created, not yet started, workload container holds, read
   * through the archive API) with the run CA appended, and the Java store. Each 0444.
   */
  static byte[] trustArchive(DockerClient client, String agentId, String caPem) {
    Optional<byte[]> imageBundle = Optional.empty();
    for (String candidate : RunTrust.IMAGE_BUNDLES) {
      imageBundle = readFile(client, agentId, candidate);
      if (imageBundle.isPresent()) {
        break;
      }
    }
    ByteArrayOutputStream joined = new ByteArrayOutputStream();
    imageBundle.ifPresent(
        bundle -> {
          joined.writeBytes(bundle);
          joined.write('\n');
        });
    joined.writeBytes(caPem.getBytes(StandardCharsets.US_ASCII));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
      file(tar, "run-ca.pem", caPem.getBytes(StandardCharsets.US_ASCII));
      file(tar, "ca-bundle.pem", joined.toByteArray());
      file(tar, "ca-bundle.p12", RunTrust.javaTrustStore(caPem));
      tar.finish();
    } catch (IOException e) {
      throw new UncheckedIOException("writing a tar to memory cannot fail", e);
    }
    return bytes.toByteArray();
  }

  private static void file(TarArchiveOutputStream tar, String name, byte[] content)
      throws IOException {
    TarArchiveEntry entry = new TarArchiveEntry(name);
    entry.setMode(0100444);
    entry.setSize(content.length);
    tar.putArchiveEntry(entry);
    tar.write(content);
    tar.closeArchiveEntry();
  }

  /**
   * A regular file of the container's image, following no link out of it; empty when there is no
   * such file (or it is a link: Debian's bundle is a file, and a link is not followed here).
   */
  private static Optional<byte[]> readFile(DockerClient client, String containerId, String path) {
    try (InputStream in = client.copyArchiveFromContainerCmd(containerId, path).exec();
        TarArchiveInputStream tar = new TarArchiveInputStream(in)) {
      TarArchiveEntry entry = tar.getNextEntry();
      if (entry == null || !entry.isFile() || entry.getSize() > 8L * 1024 * 1024) {
        return Optional.empty();
      }
      return Optional.of(tar.readAllBytes());
    } catch (IOException | RuntimeException e) {
      // No such path in the image (the daemon answers 404): try the next place.
      return Optional.empty();
    }
  }
}
