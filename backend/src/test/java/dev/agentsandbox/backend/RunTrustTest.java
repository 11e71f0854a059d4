package dev.agentsandbox.backend;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Injection;
import dev.agentsandbox.policy.config.InspectedHost;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The run CA's delivery into a sandbox, and the credentials the proxy holds instead of it. */
class RunTrustTest {
  /** A real certificate (the JDK's first trusted authority) standing in for a run CA. */
  private static String somePem() throws Exception {
    javax.net.ssl.TrustManagerFactory factory =
        javax.net.ssl.TrustManagerFactory.getInstance(
            javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
    factory.init((KeyStore) null);
    var authority =
        ((javax.net.ssl.X509TrustManager) factory.getTrustManagers()[0]).getAcceptedIssuers()[0];
    return "-----BEGIN CERTIFICATE-----\n"
        + java.util.Base64.getMimeEncoder(64, new byte[] {'\n'})
            .encodeToString(authority.getEncoded())
        + "\n-----END CERTIFICATE-----\n";
  }

  @TempDir Path temp;

  private String join(Path root) throws Exception {
    Path runCa = Files.writeString(temp.resolve("run-ca.pem"), "RUN CA\n");
    Path bundle = temp.resolve("bundle.pem");
    Process sh =
        new ProcessBuilder(
                "/bin/sh",
                "-c",
                RunTrust.joinScript(root.toString(), runCa.toString(), bundle.toString()))
            .redirectErrorStream(true)
            .start();
    assertThat(sh.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(sh.exitValue())
        .as(new String(sh.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8))
        .isZero();
    return Files.readString(bundle);
  }

  @Test
  void theRunCaIsAddedToTheImagesOwnBundle() throws Exception {
    Path root = temp.resolve("debian");
    Files.createDirectories(root.resolve("etc/ssl/certs"));
    Files.writeString(root.resolve("etc/ssl/certs/ca-certificates.crt"), "MOZILLA SET");
    assertThat(join(root)).isEqualTo("MOZILLA SET\nRUN CA\n");
  }

  @Test
  void aRedHatImagesBundleIsFoundToo() throws Exception {
    Path root = temp.resolve("rhel");
    Files.createDirectories(root.resolve("etc/pki/tls/certs"));
    Files.writeString(root.resolve("etc/pki/tls/certs/ca-bundle.crt"), "RHEL SET\n");
    assertThat(join(root)).isEqualTo("RHEL SET\n\nRUN CA\n");
  }

  @Test
  void anImageWithoutABundleTrustsTheRunCaAlone() throws Exception {
    assertThat(join(Files.createDirectories(temp.resolve("empty")))).isEqualTo("RUN CA\n");
  }

  @Test
  void theJavaStoreHoldsTheJdksAuthoritiesAndTheRunCa() throws Exception {
    byte[] store = RunTrust.javaTrustStore(somePem());
    KeyStore read = KeyStore.getInstance("PKCS12");
    read.load(new ByteArrayInputStream(store), RunTrust.JAVA_STORE_PASSWORD.toCharArray());
    assertThat(read.containsAlias("agent-sandbox-run-ca")).isTrue();
    assertThat(read.size()).as("the JDK's own authorities stay trusted").isGreaterThan(50);
  }

  @Test
  void everyCommonClientIsPointedAtTheBundle() {
    assertThat(RunTrust.environment())
        .containsEntry("SSL_CERT_FILE", RunTrust.BUNDLE)
        .containsEntry("REQUESTS_CA_BUNDLE", RunTrust.BUNDLE)
        .containsEntry("CURL_CA_BUNDLE", RunTrust.BUNDLE)
        .containsEntry("GIT_SSL_CAINFO", RunTrust.BUNDLE)
        .containsEntry("PIP_CERT", RunTrust.BUNDLE)
        .containsEntry("NODE_EXTRA_CA_CERTS", RunTrust.RUN_CA)
        .containsKey("JDK_JAVA_OPTIONS");
  }

  @Test
  void aProxyHeldCredentialReachesTheWorkloadAsAPlaceholderAndTheProxyWithItsValue() {
    InspectedHost github =
        new InspectedHost(
            "api.github.com",
            Optional.empty(),
            Optional.of(Injection.of("github", "Authorization")));
    RunEgress egress =
        new RunEgress(
            AllowList.parse(List.of("api.github.com")),
            Optional.empty(),
            List.of(),
            Map.of(),
            List.of(github),
            Optional.empty());
    Instant end = Instant.now().plusSeconds(60);
    RunSpec spec =
        new RunSpec(
                "r1",
                "helper",
                "img",
                List.of("true"),
                Map.of(),
                egress,
                Resources.DEFAULT,
                Duration.ofSeconds(60),
                end,
                false)
            .withCredentials(
                List.of(
                    new RunCredential("github", "ghs_real", Optional.of("GITHUB_TOKEN"), end),
                    new RunCredential("self", "asb_self", Optional.empty(), end)));
    assertThat(spec.workloadCredentials())
        .extracting(RunCredential::name, RunCredential::value)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("github", Injection.PLACEHOLDER),
            org.assertj.core.groups.Tuple.tuple("self", "asb_self"));
    assertThat(spec.workloadCredentials().get(0).env()).contains("GITHUB_TOKEN");
    assertThat(spec.proxyCredentials())
        .extracting(RunCredential::value)
        .containsExactly("ghs_real");
  }
}
