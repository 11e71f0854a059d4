package dev.agentsandbox.testing.api;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * A real JDK HTTP client that checks every exchange against the OpenAPI document ({@link
 * OpenApiContract}) before the test sees the answer. Bodies read as strings are validated; a body
 * read another way (a stream) has its status and content type checked.
 */
public final class ContractCheckedHttpClient extends HttpClient {
  private final HttpClient delegate;

  private ContractCheckedHttpClient(HttpClient delegate) {
    this.delegate = delegate;
  }

  /** A checked client with a 10-second connect timeout. */
  public static HttpClient create() {
    return new ContractCheckedHttpClient(
        HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build());
  }

  /**
   * {@code delegate} (built as a test needs it: HTTP/1.1, its own connection) with every exchange
   * checked; closing the answer closes {@code delegate}.
   */
  public static HttpClient wrapping(HttpClient delegate) {
    return new ContractCheckedHttpClient(delegate);
  }

  @Override
  public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
      throws IOException, InterruptedException {
    HttpResponse<T> response = delegate.send(request, handler);
    check(request, response);
    return response;
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest request, HttpResponse.BodyHandler<T> handler) {
    return delegate.sendAsync(request, handler).thenApply(response -> check(request, response));
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest request,
      HttpResponse.BodyHandler<T> handler,
      HttpResponse.PushPromiseHandler<T> pushPromiseHandler) {
    return delegate
        .sendAsync(request, handler, pushPromiseHandler)
        .thenApply(response -> check(request, response));
  }

  private static <T> HttpResponse<T> check(HttpRequest request, HttpResponse<T> response) {
    OpenApiContract.document()
        .check(
            new OpenApiContract.Exchange(
                request.method(),
                request.uri().getRawPath(),
                request.uri().getRawQuery(),
                request.headers().firstValue("Content-Type").orElse(null),
                bodyOf(request),
                response.statusCode(),
                response.headers().firstValue("Content-Type").orElse(null),
                response.body() instanceof String text ? text : null));
    return response;
  }

  /** The bytes a request's publisher sends (the JDK's string and byte publishers replay). */
  private static String bodyOf(HttpRequest request) {
    Optional<HttpRequest.BodyPublisher> publisher = request.bodyPublisher();
    if (publisher.isEmpty() || publisher.get().contentLength() == 0) {
      return null;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    CompletableFuture<Void> done = new CompletableFuture<>();
    publisher
        .get()
        .subscribe(
            new Flow.Subscriber<ByteBuffer>() {
              @Override
              public void onSubscribe(Flow.Subscription subscription) {
                subscription.request(Long.MAX_VALUE);
              }

              @Override
              public void onNext(ByteBuffer item) {
                byte[] bytes = new byte[item.remaining()];
                item.get(bytes);
                out.write(bytes, 0, bytes.length);
              }

              @Override
              public void onError(Throwable error) {
                done.completeExceptionally(error);
              }

              @Override
              public void onComplete() {
                done.complete(null);
              }
            });
    try {
      done.get(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted reading a request body", e);
    } catch (ExecutionException | TimeoutException e) {
      throw new AssertionError("read the request body to check it: " + e, e);
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  @Override
  public Optional<CookieHandler> cookieHandler() {
    return delegate.cookieHandler();
  }

  @Override
  public Optional<Duration> connectTimeout() {
    return delegate.connectTimeout();
  }

  @Override
  public Redirect followRedirects() {
    return delegate.followRedirects();
  }

  @Override
  public Optional<ProxySelector> proxy() {
    return delegate.proxy();
  }

  @Override
  public SSLContext sslContext() {
    return delegate.sslContext();
  }

  @Override
  public SSLParameters sslParameters() {
    return delegate.sslParameters();
  }

  @Override
  public Optional<Authenticator> authenticator() {
    return delegate.authenticator();
  }

  @Override
  public Version version() {
    return delegate.version();
  }

  @Override
  public Optional<Executor> executor() {
    return delegate.executor();
  }

  @Override
  public void close() {
    delegate.close();
  }
}
