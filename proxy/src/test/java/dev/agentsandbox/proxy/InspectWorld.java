package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Injection;
import dev.agentsandbox.policy.config.InspectPolicy;
import dev.agentsandbox.policy.config.InspectedHost;
import dev.agentsandbox.policy.http.RequestRule;
import dev.agentsandbox.policy.http.RequestRules;
import dev.agentsandbox.policy.net.InternalRanges;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * The loopback world of the inspection tests: a test CA standing in for the public ones, a "GitHub"
 * ({@code api.test}, inspected: {@code GET,HEAD /repos/acme/**} and {@code POST
 * /repos/acme/widgets/issues}, with the token {@link #TOKEN} injected as {@code Authorization:
 * Bearer}), an opaque host ({@code other.test}) and an attacker's host ({@code evil.test}), all
 * real HTTPS servers on 127.0.0.2 with certificates of the test CA, names mapped by a hosts table.
 */
final class InspectWorld implements AutoCloseable {
  static final String TOKEN = "ghs_inspected0TOKEN0value0the0workload0never0sees";
  static final String CREDENTIAL = "github";

  final TestCa publicCa;
  final TlsUpstream api;
  final TlsUpstream other;
  final TlsUpstream evil;
  final Path credentials;
  final RecordingListener decisions = new RecordingListener();
  final RunningProxy proxy;

  InspectWorld() throws Exception {
    this(
        List.of(
            "GET,HEAD /repos/acme/**",
            "POST /repos/acme/widgets/issues",
            "GET /echo",
            "GET /redirect",
            "GET /large",
            "GET /gzip"));
  }

  InspectWorld(List<String> rules) throws Exception {
    this(rules, ca -> ca.serverFor("api.test"));
  }

  /** What the "real" api.test presents, made with the world's public CA. */
  @FunctionalInterface
  interface ApiCertificate {
    javax.net.ssl.SSLContext make(TestCa publicCa) throws Exception;
  }

  InspectWorld(List<String> rules, ApiCertificate apiCertificate) throws Exception {
    publicCa = TestCa.create("agent-sandbox test public CA");
    api = new TlsUpstream(Fixture.PERMITTED, "api", apiCertificate.make(publicCa));
    other = new TlsUpstream(Fixture.PERMITTED, "other", publicCa.serverFor("other.test"));
    evil = new TlsUpstream(Fixture.PERMITTED, "evil", publicCa.serverFor("evil.test"));
    credentials = Files.createTempDirectory("asb-proxy-credentials");
    Files.writeString(credentials.resolve(CREDENTIAL), TOKEN);
    InspectedHost inspected =
        new InspectedHost(
            "api.test",
            rules == null
                ? Optional.empty()
                : Optional.of(new RequestRules(rules.stream().map(RequestRule::parse).toList())),
            Optional.of(Injection.of(CREDENTIAL, "Authorization")));
    proxy =
        RunningProxy.start(
            config(List.of(inspected), Instant.now().plus(1, ChronoUnit.HOURS)),
            List.of(decisions));
  }

  ProxyConfig config(List<InspectedHost> inspected, Instant caExpiresAt) {
    Map<String, List<InetAddress>> hosts = new LinkedHashMap<>();
    for (String name : List.of("api.test", "other.test", "evil.test")) {
      hosts.put(name, Fixture.addresses(Fixture.PERMITTED));
    }
    List<String> allow =
        List.of("api.test:" + api.port(), "other.test:" + other.port(), "evil.test:" + evil.port());
    InspectPolicy policy =
        new InspectPolicy(
            inspected,
            caExpiresAt,
            Optional.of(credentials.toString()),
            Optional.of(publicCa.pem()));
    return new ProxyConfig(
        "127.0.0.1",
        0,
        AllowList.parse(allow),
        Optional.empty(),
        InternalRanges.parse(
            List.of(
                Fixture.PERMITTED + "/32:" + api.port() + "," + other.port() + "," + evil.port())),
        Optional.of(hosts),
        Optional.empty(),
        Optional.empty(),
        "run-inspect",
        Optional.empty(),
        Limits.DEFAULTS,
        Optional.of(ProxyConfigs.inspect(policy)));
  }

  InetSocketAddress proxyAddress() {
    return proxy.address();
  }

  /** The run CA's certificate as the sandbox gets it. */
  X509Certificate runCa() throws Exception {
    return (X509Certificate)
        CertificateFactory.getInstance("X.509")
            .generateCertificate(
                new ByteArrayInputStream(
                    proxy.caCertificatePem().orElseThrow().getBytes(StandardCharsets.US_ASCII)));
  }

  /** A client TLS context trusting exactly the given certificates. */
  static SSLContext trusting(X509Certificate... certificates) throws Exception {
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    for (int i = 0; i < certificates.length; i++) {
      store.setCertificateEntry("ca" + i, certificates[i]);
    }
    TrustManagerFactory factory =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    factory.init(store);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, factory.getTrustManagers(), null);
    return context;
  }

  /** A client context trusting the run's CA, as a workload given its bundle does. */
  SSLContext workloadTls() throws Exception {
    return trusting(runCa());
  }

  /** The run CA's certificate written to a PEM file (for curl's --cacert). */
  Path runCaFile() throws IOException {
    Path file =
        credentials
            .getParent()
            .resolve("run-ca-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + ".pem");
    Files.writeString(file, proxy.caCertificatePem().orElseThrow());
    file.toFile().deleteOnExit();
    return file;
  }

  /**
   * Opens a CONNECT tunnel to {@code target} through the proxy and TLS inside it, sending {@code
   * sni} as the server name; the socket's streams then carry plain HTTP/1.1.
   */
  SSLSocket tunnel(String target, String sni, SSLContext tls) throws IOException {
    Socket socket = new Socket(proxy.address().getAddress(), proxy.address().getPort());
    socket.setSoTimeout(20_000);
    OutputStream out = socket.getOutputStream();
    out.write(
        ("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII));
    out.flush();
    String head = readHead(socket.getInputStream());
    if (!head.startsWith("HTTP/1.1 200")) {
      socket.close();
      throw new IOException("CONNECT " + target + " was answered: " + head);
    }
    int colon = target.lastIndexOf(':');
    SSLSocket ssl =
        (SSLSocket)
            tls.getSocketFactory()
                .createSocket(socket, sni, Integer.parseInt(target.substring(colon + 1)), true);
    SSLParameters parameters = ssl.getSSLParameters();
    parameters.setServerNames(List.of(new SNIHostName(sni)));
    parameters.setEndpointIdentificationAlgorithm("HTTPS");
    ssl.setSSLParameters(parameters);
    ssl.startHandshake();
    return ssl;
  }

  /** Reads a response head, byte by byte, up to the blank line. */
  static String readHead(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (!head.toString().endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) {
        break;
      }
      head.append((char) b);
    }
    return head.toString();
  }

  String apiTarget() {
    return "api.test:" + api.port();
  }

  @Override
  public void close() throws IOException {
    proxy.close();
    api.close();
    other.close();
    evil.close();
    try (var files = Files.list(credentials)) {
      for (Path file : files.toList()) {
        Files.delete(file);
      }
    }
    Files.delete(credentials);
  }
}
