package dev.agentsandbox.testing;

import static java.nio.charset.StandardCharsets.UTF_8;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.StringWriter;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.Date;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * What the client compatibility suite talks to, on this host only: a dummy interface carrying the
 * layout's address, and behind it a plain HTTP server (web.test) and an HTTPS server whose
 * certificate (web.test, pypi.test, git.test) comes from a CA made for this one test. The HTTPS
 * server also carries a PEP 503 package index with one wheel built here, and a git repository
 * served by the host's {@code git http-backend} (git's smart HTTP protocol, through CGI). Every
 * allowed answer carries a token drawn for this test, so a body cannot come from anywhere else.
 *
 * <p>Each backend's suite stands it up on its own {@link Layout} (link name and address), so the
 * Docker and the microVM suites never collide on the host.
 */
public final class CompatUpstream implements AutoCloseable {
  /** The Docker backend's suite: link {@code asb-compat0}, 198.18.113.1. */
  public static final Layout DOCKER = new Layout("asb-compat0", "198.18.113.1", "198.18.113.0/24");

  /** The microVM backend's suite: link {@code asbm-compat0}, 198.18.114.1. */
  public static final Layout MICROVM =
      new Layout("asbm-compat0", "198.18.114.1", "198.18.114.0/24");

  static final String PROJECT = "asb-compat-probe";

  /**
   * Where the upstream lives: a dummy link of that name carrying the address (a /32), inside the
   * CIDR the run declares internal.
   */
  public record Layout(String link, String address, String cidr) {}

  private static final String MODULE = "asb_compat_probe";
  private static final String WHEEL = MODULE + "-1.0-py3-none-any.whl";
  private static final List<String> TLS_NAMES = List.of("web.test", "pypi.test", "git.test");

  /** Drawn for this upstream; every allowed answer carries it. */
  public final String token;

  /** The test CA's certificate (PEM) that the clients are told to trust. */
  public final String caPem;

  public final Layout layout;
  private final Path dir;
  private final ExecutorService executor = Executors.newFixedThreadPool(8);
  private final List<String> links = new ArrayList<>();
  private final byte[] wheel;
  private HttpServer http;
  private HttpsServer https;

  private CompatUpstream(Layout layout, Path dir, String token, String caPem, byte[] wheel) {
    this.layout = layout;
    this.dir = dir;
    this.token = token;
    this.caPem = caPem;
    this.wheel = wheel;
  }

  /** What web.test answers on both ports. */
  public String body() {
    return "hello from the compatibility upstream " + token;
  }

  public int httpPort() {
    return http.getAddress().getPort();
  }

  public int tlsPort() {
    return https.getAddress().getPort();
  }

  public static CompatUpstream start(Layout layout) throws Exception {
    Path dir = Files.createTempDirectory("asb-compat-");
    List<String> created = new ArrayList<>();
    CompatUpstream upstream = null;
    try {
      KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
      generator.initialize(256);
      KeyPair caKeys = generator.generateKeyPair();
      KeyPair serverKeys = generator.generateKeyPair();
      X509Certificate ca = caCertificate(caKeys);
      X509Certificate server = serverCertificate(ca, caKeys, serverKeys);
      byte[] seed = new byte[8];
      new SecureRandom().nextBytes(seed);
      String token = HexFormat.of().formatHex(seed);
      upstream = new CompatUpstream(layout, dir, token, pem(ca), wheel(token));
      upstream.makeRepository();
      Host.addLink(layout.link(), layout.address());
      created.add(layout.link());
      upstream.links.addAll(created);
      InetAddress address = InetAddress.getByName(layout.address());
      upstream.http = HttpServer.create(new InetSocketAddress(address, 0), 64);
      upstream.http.createContext("/", upstream.guarded(upstream::hello));
      upstream.http.setExecutor(upstream.executor);
      upstream.https = HttpsServer.create(new InetSocketAddress(address, 0), 64);
      upstream.https.setHttpsConfigurator(
          new HttpsConfigurator(serverContext(serverKeys, server, ca)));
      upstream.https.createContext("/hello", upstream.guarded(upstream::hello));
      upstream.https.createContext("/simple/", upstream.guarded(upstream::index));
      upstream.https.createContext("/packages/", upstream.guarded(upstream::packageFile));
      upstream.https.createContext("/repo.git/", upstream.guarded(upstream::gitBackend));
      upstream.https.setExecutor(upstream.executor);
      upstream.http.start();
      upstream.https.start();
      return upstream;
    } catch (Exception e) {
      if (upstream != null) {
        upstream.close();
      } else {
        for (String link : created) {
          Host.deleteLink(link);
        }
        deleteTree(dir);
      }
      throw e;
    }
  }

  private void hello(HttpExchange exchange) throws IOException {
    send(exchange, 200, "text/plain", body().getBytes(UTF_8));
  }

  /** PEP 503: the root lists the one project, the project page links the one wheel. */
  private void index(HttpExchange exchange) throws IOException {
    String path = exchange.getRequestURI().getPath();
    String page;
    if (path.equals("/simple/")) {
      page = "<a href=\"" + PROJECT + "/\">" + PROJECT + "</a>";
    } else if (path.equals("/simple/" + PROJECT + "/")) {
      String digest = HexFormat.of().formatHex(sha256(wheel));
      page = "<a href=\"/packages/" + WHEEL + "#sha256=" + digest + "\">" + WHEEL + "</a>";
    } else {
      send(exchange, 404, "text/plain", "no such project".getBytes(UTF_8));
      return;
    }
    String html = "<!DOCTYPE html><html><body>" + page + "</body></html>";
    send(exchange, 200, "text/html", html.getBytes(UTF_8));
  }

  private void packageFile(HttpExchange exchange) throws IOException {
    if (exchange.getRequestURI().getPath().equals("/packages/" + WHEEL)) {
      send(exchange, 200, "application/octet-stream", wheel);
    } else {
      send(exchange, 404, "text/plain", "no such file".getBytes(UTF_8));
    }
  }

  /**
   * git's smart HTTP: the request handed to {@code git http-backend} as CGI, its answer relayed.
   */
  private void gitBackend(HttpExchange exchange) throws IOException, InterruptedException {
    byte[] request = exchange.getRequestBody().readAllBytes();
    ProcessBuilder builder = new ProcessBuilder("git", "http-backend");
    Map<String, String> env = builder.environment();
    env.put("GIT_PROJECT_ROOT", dir.resolve("served").toString());
    env.put("GIT_HTTP_EXPORT_ALL", "1");
    env.put("REQUEST_METHOD", exchange.getRequestMethod());
    env.put("PATH_INFO", exchange.getRequestURI().getRawPath());
    String query = exchange.getRequestURI().getRawQuery();
    env.put("QUERY_STRING", query == null ? "" : query);
    env.put("CONTENT_LENGTH", Integer.toString(request.length));
    env.put("REMOTE_ADDR", exchange.getRemoteAddress().getAddress().getHostAddress());
    copyHeader(exchange, "Content-Type", env, "CONTENT_TYPE");
    copyHeader(exchange, "Content-Encoding", env, "HTTP_CONTENT_ENCODING");
    copyHeader(exchange, "Git-Protocol", env, "HTTP_GIT_PROTOCOL");
    builder.redirectError(
        ProcessBuilder.Redirect.appendTo(dir.resolve("http-backend.log").toFile()));
    Process process = builder.start();
    try {
      try (OutputStream in = process.getOutputStream()) {
        in.write(request);
      }
      InputStream out = new BufferedInputStream(process.getInputStream());
      int status = 200;
      String line;
      while (!(line = readLine(out)).isEmpty()) {
        int colon = line.indexOf(':');
        if (colon < 0) {
          continue;
        }
        String name = line.substring(0, colon).strip();
        String value = line.substring(colon + 1).strip();
        if (name.equalsIgnoreCase("Status")) {
          status = Integer.parseInt(value.split(" ", 2)[0]);
        } else {
          exchange.getResponseHeaders().add(name, value);
        }
      }
      exchange.sendResponseHeaders(status, 0);
      try (OutputStream body = exchange.getResponseBody()) {
        out.transferTo(body);
      }
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        throw new IOException("git http-backend did not end within 30 s");
      }
    } finally {
      process.destroyForcibly();
    }
  }

  private static void copyHeader(
      HttpExchange exchange, String header, Map<String, String> env, String variable) {
    String value = exchange.getRequestHeaders().getFirst(header);
    if (value != null) {
      env.put(variable, value);
    }
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    for (int b = in.read(); b != -1 && b != '\n'; b = in.read()) {
      if (line.size() > 8192) {
        throw new IOException("git http-backend wrote a header line over 8 KiB");
      }
      line.write(b);
    }
    return line.toString(UTF_8).replaceAll("\r$", "");
  }

  private interface Handler {
    void handle(HttpExchange exchange) throws Exception;
  }

  /** A handler that answers 500 when it fails, and always closes the exchange. */
  private HttpHandler guarded(Handler handler) {
    return exchange -> {
      try {
        handler.handle(exchange);
      } catch (Exception e) {
        if (exchange.getResponseCode() == -1) {
          byte[] text = ("test upstream failed: " + e).getBytes(UTF_8);
          exchange.sendResponseHeaders(500, text.length);
          exchange.getResponseBody().write(text);
        }
      } finally {
        exchange.close();
      }
    };
  }

  private static void send(HttpExchange exchange, int status, String type, byte[] body)
      throws IOException {
    exchange.getResponseHeaders().set("Content-Type", type);
    exchange.sendResponseHeaders(status, body.length);
    exchange.getResponseBody().write(body);
  }

  /** A bare repository, served/repo.git, whose one commit has a README holding the token. */
  private void makeRepository() throws IOException, InterruptedException {
    Path work = dir.resolve("work");
    Path bare = dir.resolve("served").resolve("repo.git");
    Files.createDirectories(work);
    Files.writeString(work.resolve("README"), token, UTF_8);
    git(dir, "init", "-q", "--bare", "-b", "main", bare.toString());
    git(work, "init", "-q", "-b", "main");
    git(work, "add", "README");
    git(
        work,
        "-c",
        "user.name=compat",
        "-c",
        "user.email=compat@upstream.test",
        "commit",
        "-q",
        "-m",
        "compatibility suite");
    git(work, "push", "-q", bare.toString(), "main");
  }

  private static void git(Path directory, String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("git", "-C", directory.toString()));
    command.addAll(List.of(args));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output = new String(process.getInputStream().readAllBytes(), UTF_8);
    if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
      process.destroyForcibly();
      throw new IOException("preparing the test repository: " + command + " failed: " + output);
    }
  }

  /** A pure-Python wheel whose module holds the token; RECORD lists each file's hash and size. */
  static byte[] wheel(String value) throws IOException {
    String info = MODULE + "-1.0.dist-info/";
    Map<String, byte[]> files = new LinkedHashMap<>();
    files.put(MODULE + "/__init__.py", ("VALUE = \"" + value + "\"\n").getBytes(UTF_8));
    files.put(
        info + "METADATA",
        ("Metadata-Version: 2.1\nName: " + PROJECT + "\nVersion: 1.0\n").getBytes(UTF_8));
    files.put(
        info + "WHEEL",
        ("Wheel-Version: 1.0\nGenerator: agent-sandbox ClientCompatibilityIT\n"
                + "Root-Is-Purelib: true\nTag: py3-none-any\n")
            .getBytes(UTF_8));
    StringBuilder record = new StringBuilder();
    for (Map.Entry<String, byte[]> file : files.entrySet()) {
      record
          .append(file.getKey())
          .append(",sha256=")
          .append(Base64.getUrlEncoder().withoutPadding().encodeToString(sha256(file.getValue())))
          .append(',')
          .append(file.getValue().length)
          .append('\n');
    }
    record.append(info).append("RECORD,,\n");
    files.put(info + "RECORD", record.toString().getBytes(UTF_8));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
      for (Map.Entry<String, byte[]> file : files.entrySet()) {
        zip.putNextEntry(new ZipEntry(file.getKey()));
        zip.write(file.getValue());
        zip.closeEntry();
      }
    }
    return bytes.toByteArray();
  }

  private static byte[] sha256(byte[] data) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(data);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }

  private static X509Certificate caCertificate(KeyPair keys) throws Exception {
    X500Name name = new X500Name("CN=agent-sandbox client compatibility test CA");
    Instant now = Instant.now();
    JcaX509v3CertificateBuilder builder =
        new JcaX509v3CertificateBuilder(
            name,
            new BigInteger(64, new SecureRandom()),
            Date.from(now.minus(1, ChronoUnit.HOURS)),
            Date.from(now.plus(1, ChronoUnit.DAYS)),
            name,
            keys.getPublic());
    JcaX509ExtensionUtils utils = new JcaX509ExtensionUtils();
    builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
    builder.addExtension(
        Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
    builder.addExtension(
        Extension.subjectKeyIdentifier, false, utils.createSubjectKeyIdentifier(keys.getPublic()));
    return sign(builder, keys);
  }

  private static X509Certificate serverCertificate(X509Certificate ca, KeyPair caKeys, KeyPair keys)
      throws Exception {
    Instant now = Instant.now();
    JcaX509v3CertificateBuilder builder =
        new JcaX509v3CertificateBuilder(
            ca,
            new BigInteger(64, new SecureRandom()),
            Date.from(now.minus(1, ChronoUnit.HOURS)),
            Date.from(now.plus(1, ChronoUnit.DAYS)),
            new X500Name("CN=" + TLS_NAMES.get(0)),
            keys.getPublic());
    JcaX509ExtensionUtils utils = new JcaX509ExtensionUtils();
    builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
    builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
    builder.addExtension(
        Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
    builder.addExtension(
        Extension.subjectAlternativeName,
        false,
        new GeneralNames(
            TLS_NAMES.stream()
                .map(n -> new GeneralName(GeneralName.dNSName, n))
                .toArray(GeneralName[]::new)));
    builder.addExtension(
        Extension.authorityKeyIdentifier, false, utils.createAuthorityKeyIdentifier(ca));
    builder.addExtension(
        Extension.subjectKeyIdentifier, false, utils.createSubjectKeyIdentifier(keys.getPublic()));
    return sign(builder, caKeys);
  }

  private static X509Certificate sign(JcaX509v3CertificateBuilder builder, KeyPair signer)
      throws Exception {
    return new JcaX509CertificateConverter()
        .getCertificate(
            builder.build(
                new JcaContentSignerBuilder("SHA256withECDSA").build(signer.getPrivate())));
  }

  private static SSLContext serverContext(
      KeyPair keys, X509Certificate certificate, X509Certificate ca) throws Exception {
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    store.setKeyEntry(
        "server", keys.getPrivate(), new char[0], new X509Certificate[] {certificate, ca});
    KeyManagerFactory factory =
        KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    factory.init(store, new char[0]);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(factory.getKeyManagers(), null, null);
    return context;
  }

  private static String pem(X509Certificate certificate) throws IOException {
    StringWriter text = new StringWriter();
    try (JcaPEMWriter writer = new JcaPEMWriter(text)) {
      writer.writeObject(certificate);
    }
    return text.toString();
  }

  /** What {@code git http-backend} wrote to its standard error, for a failing test's message. */
  public String backendLog() throws IOException {
    Path log = dir.resolve("http-backend.log");
    return Files.exists(log) ? Files.readString(log, UTF_8) : "";
  }

  private static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    }
  }

  @Override
  public void close() throws IOException, InterruptedException {
    if (http != null) {
      http.stop(0);
    }
    if (https != null) {
      https.stop(0);
    }
    executor.shutdownNow();
    for (String link : links) {
      Host.deleteLink(link);
    }
    deleteTree(dir);
  }
}
