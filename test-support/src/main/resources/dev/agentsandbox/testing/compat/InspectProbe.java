import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * The inspected suite's Java probe: the JDK's HttpClient through the sandbox's proxy, trusting
 * what the platform set in JDK_JAVA_OPTIONS (the run's trust store); each attempt a fresh client.
 * Usage: java InspectProbe.java ROUNDS ALLOWED_URL REFUSED_URL.
 */
public class InspectProbe {
  public static void main(String[] args) throws Exception {
    int rounds = Integer.parseInt(args[0]);
    URI proxy = URI.create(System.getenv("https_proxy"));
    for (int i = 1; i <= rounds; i++) {
      for (String[] cell : new String[][] {{"inspected", args[1]}, {"refused-path", args[2]}}) {
        String result;
        try {
          HttpClient client =
              HttpClient.newBuilder()
                  .proxy(ProxySelector.of(new InetSocketAddress(proxy.getHost(), proxy.getPort())))
                  .connectTimeout(Duration.ofSeconds(20))
                  .build();
          HttpResponse<String> answer =
              client.send(
                  HttpRequest.newBuilder(URI.create(cell[1])).timeout(Duration.ofSeconds(20)).build(),
                  HttpResponse.BodyHandlers.ofString());
          String body = answer.body().replaceAll("\\s+", " ");
          result = "status=" + answer.statusCode() + " body=" + body.substring(0, Math.min(200, body.length()));
        } catch (Exception e) {
          result = "error=" + e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).replaceAll("\\s+", " ");
        }
        System.out.println("@@ java " + cell[0] + " " + i + " " + result);
      }
    }
  }
}
