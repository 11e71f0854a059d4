package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.artifacts.ArtifactPath;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Downloads a run's artifacts into a folder, trusting nothing the server says: each name must be an
 * artifact name ({@link ArtifactPath}) and land inside the folder once resolved, through no
 * symbolic link; each file is written to a temporary file beside its place, at most its listed
 * size, and moved into place only when its SHA-256 matches the listing (and the download's own
 * {@code X-Agent-Sandbox-Sha256}); otherwise the temporary file is deleted. An existing file is
 * never replaced.
 */
final class ArtifactDownloader {
  /** One artifact as the listing names it. */
  record Listed(String path, long size, String sha256) {}

  /** The artifact listing of one run. */
  record Listing(String runId, String store, List<Listed> artifacts) {}

  private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
  private static final Duration DOWNLOAD_TIMEOUT = Duration.ofMinutes(30);

  private final AdminApi api;
  private final String runId;

  ArtifactDownloader(AdminApi api, String runId) {
    this.api = api;
    this.runId = runId;
  }

  /** {@code GET .../runs/{id}/artifacts}, as is. */
  JsonNode listingJson() throws IOException, InterruptedException {
    return api.get("list the artifacts of run " + runId, base());
  }

  static Listing listing(JsonNode json) {
    List<Listed> artifacts = new ArrayList<>();
    for (JsonNode a : json.path("artifacts")) {
      artifacts.add(
          new Listed(
              a.path("path").asText(""), a.path("size").asLong(-1), a.path("sha256").asText("")));
    }
    return new Listing(
        json.path("run_id").asText(), json.path("store").asText(), List.copyOf(artifacts));
  }

  /**
   * Downloads {@code artifact} into {@code dir} (created if missing) and returns the file written.
   *
   * @throws UnableToDownloadArtifactException when the name, the place, the size or the hash is
   *     refused; nothing is left behind then
   */
  Path download(Listed artifact, Path dir) throws IOException, InterruptedException {
    Path target = place(artifact, dir);
    Path temp = Files.createTempFile(target.getParent(), ".artifact-", ".part");
    try {
      HttpResponse<InputStream> response =
          api.open(
              "download artifact " + artifact.path() + " of run " + runId,
              base() + "/file?path=" + URLEncoder.encode(artifact.path(), StandardCharsets.UTF_8),
              DOWNLOAD_TIMEOUT);
      String announced = response.headers().firstValue("X-Agent-Sandbox-Sha256").orElse(null);
      String got;
      try (InputStream in = response.body();
          OutputStream out = Files.newOutputStream(temp, StandardOpenOption.TRUNCATE_EXISTING)) {
        got = copy(in, out, artifact);
      }
      if (!got.equals(artifact.sha256())) {
        throw refused(
            artifact,
            "its SHA-256 is "
                + got
                + ", the listing says "
                + artifact.sha256()
                + " (the file was deleted; download it again, and if it differs again the stored"
                + " copy was changed)");
      }
      if (announced != null && !announced.equals(artifact.sha256())) {
        throw refused(
            artifact,
            "the download announced SHA-256 "
                + TimelineView.bounded(announced)
                + ", the listing "
                + artifact.sha256()
                + " (the file was deleted)");
      }
      try {
        Files.move(temp, target);
      } catch (FileAlreadyExistsException e) {
        throw refused(artifact, target + " appeared meanwhile and was not replaced");
      }
      return target;
    } finally {
      Files.deleteIfExists(temp);
    }
  }

  /**
   * Where {@code artifact} goes inside {@code dir}: checked before anything is written, with every
   * folder on the way created here and none of them a symbolic link.
   */
  Path place(Listed artifact, Path dir) throws IOException {
    Optional<String> problem = ArtifactPath.problem(artifact.path());
    if (problem.isPresent()) {
      throw refused(artifact, "not an artifact name: " + problem.get() + " (nothing written)");
    }
    if (artifact.size() < 0 || !SHA256.matcher(artifact.sha256()).matches()) {
      throw refused(artifact, "the listing gives no size or SHA-256 for it (nothing written)");
    }
    Files.createDirectories(dir);
    Path root = dir.toRealPath();
    Path target = root.resolve(artifact.path()).normalize();
    if (!target.startsWith(root) || target.equals(root)) {
      throw refused(artifact, "it resolves outside " + root + " (nothing written)");
    }
    Path folder = root;
    for (Path segment : root.relativize(target.getParent() == null ? root : target.getParent())) {
      folder = folder.resolve(segment);
      if (Files.isSymbolicLink(folder)) {
        throw refused(
            artifact, folder + " is a symbolic link; artifacts are not written through links");
      }
      if (!Files.isDirectory(folder, LinkOption.NOFOLLOW_LINKS)) {
        Files.createDirectory(folder);
      }
    }
    if (!target.getParent().toRealPath().equals(target.getParent())) {
      throw refused(artifact, "its folder resolves elsewhere (nothing written)");
    }
    if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
      throw refused(artifact, target + " exists; it is not replaced (choose another folder)");
    }
    return target;
  }

  /** Copies at most the listed size plus one byte, and returns the SHA-256 of what came. */
  private String copy(InputStream in, OutputStream out, Listed artifact) throws IOException {
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
    byte[] buffer = new byte[64 * 1024];
    long total = 0;
    int read;
    while ((read = in.read(buffer)) >= 0) {
      total += read;
      if (total > artifact.size()) {
        throw refused(
            artifact,
            "more than the listed "
                + artifact.size()
                + " bytes arrived (the download was stopped and deleted)");
      }
      digest.update(buffer, 0, read);
      out.write(buffer, 0, read);
    }
    if (total != artifact.size()) {
      throw refused(
          artifact,
          total
              + " bytes arrived, the listing says "
              + artifact.size()
              + " (the file was deleted)");
    }
    return HexFormat.of().formatHex(digest.digest());
  }

  private UnableToDownloadArtifactException refused(Listed artifact, String why) {
    return new UnableToDownloadArtifactException(
        "download artifact "
            + TimelineView.bounded(artifact.path())
            + " of run "
            + runId
            + ": "
            + why);
  }

  private String base() {
    return AdminApi.RUNS + "/" + runId + "/artifacts";
  }

  /** An artifact was refused: its name, place, size or hash. */
  static final class UnableToDownloadArtifactException extends IOException {
    private static final long serialVersionUID = 1L;

    UnableToDownloadArtifactException(String message) {
      super(message);
    }
  }
}
