package dev.agentsandbox.backend;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * How a run that inspects hosts trusts its proxy's CA (docs/runs.md, "Inspected hosts"): the CA's
 * certificate (public; never its key) is added to the image's own trust bundle, so that every
 * tunnelled host still verifies as before, and the common clients are pointed at the result. Every
 * backend delivers the same files under {@link #DIR} and the same variables.
 */
public final class RunTrust {
  /** The folder the trust files are in, on a tmpfs of the sandbox, read-only to the workload. */
  public static final String DIR = "/run/agent-sandbox/trust";

  /** The run CA's certificate alone (PEM). */
  public static final String RUN_CA = DIR + "/run-ca.pem";

  /** The image's own bundle with the run CA's certificate appended (PEM). */
  public static final String BUNDLE = DIR + "/ca-bundle.pem";

  /** The same for Java: a PKCS#12 trust store (Java reads no PEM bundle). */
  public static final String JAVA_STORE = DIR + "/ca-bundle.p12";

  /** The Java store's password: public (a trust store holds no secret; it guards nothing). */
  public static final String JAVA_STORE_PASSWORD = "agent-sandbox";

  /**
   * Where images keep their bundle, in the order they are tried (Debian, RHEL, Alpine/BSD, SUSE).
   */
  public static final List<String> IMAGE_BUNDLES =
      List.of(
          "/etc/ssl/certs/ca-certificates.crt",
          "/etc/pki/tls/certs/ca-bundle.crt",
          "/etc/ssl/cert.pem",
          "/etc/ssl/ca-bundle.pem");

  private RunTrust() {}

  /**
   * The variables that point the common clients at the bundle: OpenSSL-based tools and Go ({@code
   * SSL_CERT_FILE}), Python requests ({@code REQUESTS_CA_BUNDLE}), curl ({@code CURL_CA_BUNDLE}),
   * git ({@code GIT_SSL_CAINFO}), pip ({@code PIP_CERT}), Node ({@code NODE_EXTRA_CA_CERTS}, which
   * adds to Node's own set), and Java ({@code JDK_JAVA_OPTIONS}, read by the {@code java}
   * launcher).
   */
  public static Map<String, String> environment() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("SSL_CERT_FILE", BUNDLE);
    env.put("REQUESTS_CA_BUNDLE", BUNDLE);
    env.put("CURL_CA_BUNDLE", BUNDLE);
    env.put("GIT_SSL_CAINFO", BUNDLE);
    env.put("PIP_CERT", BUNDLE);
    env.put("NODE_EXTRA_CA_CERTS", RUN_CA);
    env.put(
        "JDK_JAVA_OPTIONS",
        "-Djavax.net.ssl.trustStore="
            + JAVA_STORE
            + " -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword="
            + JAVA_STORE_PASSWORD);
    return env;
  }

  /**
   * The Java trust store: the authorities a JDK trusts by default (this JVM's, the same Mozilla-
   * derived set a JDK in the image ships) and the run CA's certificate. Built where the backend
   * runs, since a workload image need not have a {@code keytool}.
   *
   * @throws IllegalArgumentException when {@code runCaPem} is no certificate
   */
  public static byte[] javaTrustStore(String runCaPem) {
    try {
      X509Certificate runCa =
          (X509Certificate)
              CertificateFactory.getInstance("X.509")
                  .generateCertificate(
                      new java.io.ByteArrayInputStream(
                          runCaPem.getBytes(StandardCharsets.US_ASCII)));
      TrustManagerFactory factory =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      factory.init((KeyStore) null);
      KeyStore store = KeyStore.getInstance("PKCS12");
      store.load(null, null);
      int i = 0;
      for (var manager : factory.getTrustManagers()) {
        if (manager instanceof X509TrustManager x509) {
          for (X509Certificate authority : x509.getAcceptedIssuers()) {
            store.setCertificateEntry("jdk-" + i++, authority);
          }
        }
      }
      store.setCertificateEntry("agent-sandbox-run-ca", runCa);
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      store.store(out, JAVA_STORE_PASSWORD.toCharArray());
      return out.toByteArray();
    } catch (java.security.cert.CertificateException e) {
      throw new IllegalArgumentException("the run CA's certificate could not be read", e);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("building the run's Java trust store failed: " + e, e);
    } catch (IOException e) {
      throw new UncheckedIOException("writing a key store to memory cannot fail", e);
    }
  }

  /**
   * A shell script that joins the image's bundle (the first of {@link #IMAGE_BUNDLES} under {@code
   * root}) and {@code runCa} into {@code bundle}; with no bundle in the image, the run CA alone.
   * For a guest init or an init container; {@code cat} and {@code sh} are all it needs.
   */
  public static String joinScript(String root, String runCa, String bundle) {
    StringBuilder script = new StringBuilder("b=; for f in");
    for (String candidate : IMAGE_BUNDLES) {
      script.append(" '").append(root).append(candidate).append("'");
    }
    script
        .append("; do [ -z \"$b\" ] && [ -s \"$f\" ] && b=$f; done; ")
        .append("{ if [ -n \"$b\" ]; then cat \"$b\" && echo; fi && cat '")
        .append(runCa)
        .append("'; } > '")
        .append(bundle)
        .append("' || exit 1");
    return script.toString();
  }
}
