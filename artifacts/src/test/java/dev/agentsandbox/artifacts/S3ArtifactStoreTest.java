package dev.agentsandbox.artifacts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.eclipse.jetty.util.component.AbstractLifeCycle;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStoreContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The store contract against a real S3-compatible server: s3proxy, started in this JVM on loopback
 * with SigV4 authentication and an in-memory blob store, spoken to by the AWS SDK v2 as production
 * speaks to S3.
 */
class S3ArtifactStoreTest extends ArtifactStoreContract {
  private static final String BUCKET = "artifacts";
  private static S3Proxy server;
  private static BlobStoreContext blobs;
  private static S3Client client;
  private static int prefixes;

  @BeforeAll
  static void startServer() throws Exception {
    Properties props = new Properties();
    blobs =
        ContextBuilder.newBuilder("transient")
            .credentials("identity", "credential")
            .overrides(props)
            .build(BlobStoreContext.class);
    blobs.getBlobStore().createContainerInLocation(null, BUCKET);
    server =
        S3Proxy.builder()
            .blobStore(blobs.getBlobStore())
            .awsAuthentication(AuthenticationType.AWS_V4, "test-access", "test-secret")
            .endpoint(URI.create("http://127.0.0.1:0"))
            .build();
    server.start();
    long until = System.nanoTime() + 10_000_000_000L;
    while (!AbstractLifeCycle.STARTED.equals(server.getState()) && System.nanoTime() < until) {
      Thread.onSpinWait();
    }
    assertThat(server.getState()).isEqualTo(AbstractLifeCycle.STARTED);
    client = client("test-secret");
  }

  static S3Client client(String secret) {
    return S3Client.builder()
        .endpointOverride(URI.create("http://127.0.0.1:" + server.getPort()))
        .region(Region.US_EAST_1)
        .forcePathStyle(true)
        .credentialsProvider(
            StaticCredentialsProvider.create(AwsBasicCredentials.create("test-access", secret)))
        .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
        .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
        .httpClient(UrlConnectionHttpClient.create())
        .build();
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.stop();
    }
    if (blobs != null) {
      blobs.close();
    }
  }

  @Override
  ArtifactStore store() {
    // each test gets its own key prefix: the server lives for the whole class
    return new S3ArtifactStore(client, BUCKET, "t" + testPrefix + "/");
  }

  private final int testPrefix = ++prefixes;

  @Test
  void aWrongSecretFailsWithTheStoreNamed() throws Exception {
    Path c = tmp.resolve("c");
    Files.write(c, "x".getBytes(StandardCharsets.UTF_8));
    try (S3Client bad = client("wrong-secret")) {
      ArtifactStore s = new S3ArtifactStore(bad, BUCKET, "");
      assertThatThrownBy(() -> s.put("r1", "a", c, "0".repeat(64)))
          .isInstanceOf(UnableToStoreArtifactException.class)
          .hasMessageContaining("s3://artifacts/")
          .hasMessageNotContaining("wrong-secret");
    }
  }

  @Test
  void prefixMustEndInSlash() {
    assertThatThrownBy(() -> new S3ArtifactStore(client, BUCKET, "runs"))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
