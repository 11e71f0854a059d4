package dev.agentsandbox.artifacts;

import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CommonPrefix;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Artifacts in S3-compatible object storage (AWS S3, MinIO, Ceph, ...) through the AWS SDK v2: one
 * object per file under {@code <prefix><run>/<path>}, its SHA-256 in the object's user metadata
 * {@code sha256}. The bucket must exist; its lifecycle rules may add retention of their own.
 */
public final class S3ArtifactStore implements ArtifactStore {
  private static final String SHA_KEY = "sha256";
  private final S3Client s3;
  private final String bucket;
  private final String prefix;

  /**
   * @param prefix key prefix for every run, empty or ending in {@code /}
   */
  public S3ArtifactStore(S3Client s3, String bucket, String prefix) {
    this.s3 = s3;
    this.bucket = bucket;
    if (!prefix.isEmpty() && !prefix.endsWith("/")) {
      throw new IllegalArgumentException("S3 key prefix must be empty or end in '/': " + prefix);
    }
    this.prefix = prefix;
  }

  @Override
  public String describe() {
    return "s3://" + bucket + "/" + prefix;
  }

  private String key(String runId, String path) {
    return prefix + ArtifactStore.requireRunId(runId) + "/" + ArtifactPath.require(path);
  }

  @Override
  public StoredArtifact put(String runId, String path, Path content, String sha256) {
    String key = key(runId, path);
    try {
      long size = java.nio.file.Files.size(content);
      s3.putObject(
          b -> b.bucket(bucket).key(key).metadata(Map.of(SHA_KEY, sha256)).contentLength(size),
          RequestBody.fromFile(content));
      return new StoredArtifact(path, size, sha256);
    } catch (SdkException | java.io.IOException e) {
      throw UnableToStoreArtifactException.of(
          "keep artifact " + InvalidArtifactPathException.shorten(path),
          runId,
          this,
          e.getMessage(),
          e);
    }
  }

  @Override
  public List<StoredArtifact> list(String runId) {
    String runPrefix = prefix + ArtifactStore.requireRunId(runId) + "/";
    List<StoredArtifact> out = new ArrayList<>();
    try {
      ListObjectsV2Request request =
          ListObjectsV2Request.builder().bucket(bucket).prefix(runPrefix).build();
      for (S3Object object : s3.listObjectsV2Paginator(request).contents()) {
        String path = object.key().substring(runPrefix.length());
        if (ArtifactPath.problem(path).isPresent()) {
          continue; // not written by this store
        }
        HeadObjectResponse head = s3.headObject(b -> b.bucket(bucket).key(object.key()));
        String sha = head.metadata().get(SHA_KEY);
        if (sha != null && sha.matches("[0-9a-f]{64}")) {
          out.add(new StoredArtifact(path, head.contentLength(), sha));
        }
      }
    } catch (SdkException e) {
      throw UnableToStoreArtifactException.of("list the artifacts", runId, this, e.getMessage(), e);
    }
    out.sort(Comparator.comparing(StoredArtifact::path));
    return List.copyOf(out);
  }

  @Override
  public InputStream open(String runId, String path) {
    String key = key(runId, path);
    try {
      return s3.getObject(b -> b.bucket(bucket).key(key));
    } catch (NoSuchKeyException e) {
      throw new ArtifactNotFoundException(runId, path);
    } catch (S3Exception e) {
      if (e.statusCode() == 404) {
        throw new ArtifactNotFoundException(runId, path);
      }
      throw UnableToStoreArtifactException.of("read artifact", runId, this, e.getMessage(), e);
    } catch (SdkException e) {
      throw UnableToStoreArtifactException.of("read artifact", runId, this, e.getMessage(), e);
    }
  }

  @Override
  public List<String> runIds() {
    List<String> out = new ArrayList<>();
    try {
      ListObjectsV2Request request =
          ListObjectsV2Request.builder().bucket(bucket).prefix(prefix).delimiter("/").build();
      for (CommonPrefix common : s3.listObjectsV2Paginator(request).commonPrefixes()) {
        String name = common.prefix().substring(prefix.length());
        name = name.endsWith("/") ? name.substring(0, name.length() - 1) : name;
        if (name.matches("[a-z0-9]{1,32}")) {
          out.add(name);
        }
      }
    } catch (SdkException e) {
      throw new UnableToStoreArtifactException(
          "list the runs in " + describe() + ": " + e.getMessage(), e);
    }
    return List.copyOf(out);
  }

  @Override
  public void deleteRun(String runId) {
    String runPrefix = prefix + ArtifactStore.requireRunId(runId) + "/";
    try {
      ListObjectsV2Request request =
          ListObjectsV2Request.builder().bucket(bucket).prefix(runPrefix).build();
      // One DeleteObject per key, not DeleteObjects: the batch call demands a body checksum that
      // some S3-compatible servers do not implement, and a run keeps at most its file cap.
      for (S3Object object : s3.listObjectsV2Paginator(request).contents()) {
        s3.deleteObject(b -> b.bucket(bucket).key(object.key()));
      }
    } catch (SdkException e) {
      throw UnableToStoreArtifactException.of(
          "delete the artifacts", runId, this, e.getMessage(), e);
    }
  }
}
