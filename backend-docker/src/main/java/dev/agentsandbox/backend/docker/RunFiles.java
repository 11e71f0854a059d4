package dev.agentsandbox.backend.docker;

import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * The files one run's sandbox is given before its workload starts, as {@link Delivery deliveries}:
 * its credentials (0400 files of the workload's user) and its empty output folder. A file a later
 * feature hands the workload is one more delivery here; the launch delivers each in order.
 */
final class RunFiles {
  private final RunSpec spec;
  private final DockerBackendConfig config;
  private final String credentialsName;
  private final String agentName;

  RunFiles(RunSpec spec, DockerBackendConfig config, String credentialsName, String agentName) {
    this.spec = spec;
    this.config = config;
    this.credentialsName = credentialsName;
    this.agentName = agentName;
  }

  /**
   * The files delivered into the sandbox before the workload starts, in order: the run's
   * credentials (through the proxy's writable mount of their volume: the workload's mount is
   * read-only, and Docker refuses to copy into a read-only mount), then the empty output folder.
   */
  List<Delivery> deliveries() {
    return List.of(credentialsDelivery(), outFolderDelivery());
  }

  /** The run's credentials, for a launch or a warm sandbox's hand-over. */
  Delivery credentialsDelivery() {
    return new Delivery(
        Delivery.Through.PROXY,
        FenceLayout.PROXY_CREDENTIALS,
        credentialsArchive(),
        "copying the run's credentials into volume " + credentialsName);
  }

  Delivery outFolderDelivery() {
    return new Delivery(
        Delivery.Through.WORKLOAD,
        RunContract.WORKSPACE,
        outFolderArchive(),
        "creating " + RunContract.OUT_DIR + " in workload container " + agentName);
  }

  /**
   * The run's credentials as a tar of plain files, each mode 0400 and owned by the workload's user;
   * the daemon extracts it into the proxy's writable mount of the credentials volume.
   */
  byte[] credentialsArchive() {
    String[] ids = config.workloadUser().split(":", 2);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
      // A credential the proxy injects goes in as its placeholder: its value is the proxy's alone.
      for (RunCredential credential : spec.workloadCredentials()) {
        byte[] value = credential.value().getBytes(StandardCharsets.UTF_8);
        TarArchiveEntry entry = new TarArchiveEntry(credential.name());
        entry.setMode(0100400);
        entry.setIds(Integer.parseInt(ids[0]), Integer.parseInt(ids[1]));
        entry.setSize(value.length);
        tar.putArchiveEntry(entry);
        tar.write(value);
        tar.closeArchiveEntry();
      }
      tar.finish();
    } catch (IOException e) {
      throw new UncheckedIOException("writing a tar to memory cannot fail", e);
    }
    return bytes.toByteArray();
  }

  /** An empty {@code out/} folder owned by the workload's user, copied onto the workspace. */
  byte[] outFolderArchive() {
    String[] ids = config.workloadUser().split(":", 2);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
      TarArchiveEntry entry = new TarArchiveEntry(RunContract.OUT_ARCHIVE_FOLDER + "/");
      entry.setMode(040700);
      entry.setIds(Integer.parseInt(ids[0]), Integer.parseInt(ids[1]));
      tar.putArchiveEntry(entry);
      tar.closeArchiveEntry();
      tar.finish();
    } catch (IOException e) {
      throw new UncheckedIOException("writing a tar to memory cannot fail", e);
    }
    return bytes.toByteArray();
  }

  /** What the credentials copy writes: names, modes and owner, never a value. */
  Map<String, Object> credentialsCopy(String proxyName) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("Container", proxyName);
    body.put("Path", FenceLayout.PROXY_CREDENTIALS);
    body.put("Volume", credentialsName);
    body.put("Owner", config.workloadUser());
    body.put("Mode", "0400");
    body.put("Files", spec.credentials().stream().map(RunCredential::name).sorted().toList());
    body.put(
        "Env",
        spec.credentials().stream()
            .filter(c -> c.env().isPresent())
            .map(c -> c.env().orElseThrow() + "=<redacted>")
            .sorted()
            .toList());
    return body;
  }
}
