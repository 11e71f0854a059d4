import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The suite's JDK probe: java.net.http.HttpClient, a new client for each attempt, one line per
 * attempt. HttpClient reads no proxy variable: like any Java program behind a proxy, this one
 * hands it the proxy named in http_proxy; it trusts the CA file named in ASB_CA_FILE.
 * Usage: java Probe.java ROUNDS
 */
public class Probe {
  public static void main(String[] args) throws Exception {
    int rounds = Integer.parseInt(args[0]);
    String ip = System.getenv("ASB_IP");
    String httpPort = System.getenv("ASB_HTTP_PORT");
    String tlsPort = System.getenv("ASB_TLS_PORT");
    URI proxy = URI.create(System.getenv("http_proxy"));
    SSLContext tls = trusting(Path.of(System.getenv("ASB_CA_FILE")));
    String[][] cells = {
      {"allowed", "http://web.test:" + httpPort + "/", "proxy"},
      {"allowed-tls", "https://web.test:" + tlsPort + "/hello", "proxy"},
      {"refused", "http://java.refused.test:" + httpPort + "/", "proxy"},
      {"by-ip", "http://" + ip + ":" + httpPort + "/", "proxy"},
      {"direct-ip", "http://" + ip + ":" + httpPort + "/", "direct"},
    };
    for (int attempt = 1; attempt <= rounds; attempt++) {
      for (String[] cell : cells) {
        HttpClient.Builder builder =
            HttpClient.newBuilder().sslContext(tls).connectTimeout(Duration.ofSeconds(20));
        if (cell[2].equals("proxy")) {
          builder.proxy(
              ProxySelector.of(new InetSocketAddress(proxy.getHost(), proxy.getPort())));
        }
        String result;
        try {
          HttpClient client = builder.build();
          HttpResponse<String> answer =
              client.send(
                  HttpRequest.newBuilder(URI.create(cell[1]))
                      .timeout(Duration.ofSeconds(20))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
          result = "status=" + answer.statusCode() + " body=" + oneLine(answer.body());
        } catch (Exception e) {
          result = "error=" + oneLine(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        System.out.println("@@ java " + cell[0] + " " + attempt + " " + result);
      }
    }
  }

  private static SSLContext trusting(Path pem) throws Exception {
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    try (InputStream in = Files.newInputStream(pem)) {
      store.setCertificateEntry(
          "test-ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    TrustManagerFactory factory =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    factory.init(store);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, factory.getTrustManagers(), null);
    return context;
  }

  private static String oneLine(String text) {
    String line = String.valueOf(text).replaceAll("\\s+", " ").strip();
    return line.length() > 300 ? line.substring(0, 300) : line;
  }
}
