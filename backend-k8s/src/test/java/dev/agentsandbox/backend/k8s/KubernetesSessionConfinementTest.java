package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.k8s.KubernetesSessionTest.Output;
import dev.agentsandbox.backend.session.InvalidWorkspacePathException;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.WorkspacePath;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClassBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.NonDeletingOperation;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where a session's steps and files land: a step runs under its own session pod's step runner (a
 * child of that runner's process, in that pod's workspace), never under another session's and never
 * through the API server (no request of any session names {@code exec}, {@code attach}, {@code
 * portforward} or a pod proxy); and no path leaves {@code /workspace}, written with {@code ..} or
 * absolute or through a link a step made. The pods are {@link SessionPod}s: the real relay and
 * runner as processes on loopback, reached over the relay's pinned TLS.
 */
@EnableKubernetesMockClient(crud = true)
class KubernetesSessionConfinementTest {
  static KubernetesClient client;
  static KubernetesMockServer server;

  /** Subresources that would run something in a pod, or reach it, through the API server. */
  private static final Pattern REACHES_INTO_A_POD =
      Pattern.compile("/(exec|attach|portforward|proxy|ephemeralcontainers)(/|\\?|$)");

  /** A read of the agent container's log: a session's is the runner's, never the workload's. */
  private static final Pattern AGENT_LOG =
      Pattern.compile("/log\\?.*container=" + BundleFactory.AGENT_CONTAINER + "(&|$)");

  @TempDir Path dir;
  private FakeCluster cluster;
  private final SandboxListener quiet =
      new SandboxListener() {
        @Override
        public void onOutput(byte[] chunk) {}

        @Override
        public void onEgressDecision(String jsonLine) {}
      };

  @BeforeEach
  void setUp() {
    cluster = new FakeCluster(client, server);
    client
        .runtimeClasses()
        .resource(
            new RuntimeClassBuilder()
                .withNewMetadata()
                .withName("gvisor")
                .endMetadata()
                .withHandler("runsc")
                .build())
        .createOr(NonDeletingOperation::update);
  }

  @AfterEach
  void tearDown() {
    cluster.close();
  }

  private SessionSandbox open(String id, String proxyIp) throws Exception {
    cluster.serveProxy(id, proxyIp);
    KubernetesBackend backend =
        new KubernetesBackend(
            client, KubernetesSessionTest.config(Duration.ofSeconds(90)), Clock.systemUTC());
    return backend.openSession(Specs.spec(id), quiet);
  }

  /** The step's own pid, then its ancestors' up to init, one a line. */
  private static final String ANCESTRY =
      "p=$$; n=0; while [ \"$p\" -gt 1 ] && [ $n -lt 64 ]; do echo \"$p\";"
          + " p=$(cut -d' ' -f4 /proc/$p/stat); n=$((n+1)); done";

  @Test
  void aStepRunsUnderItsOwnSessionsRunnerAndNothingReachesIntoAPod() throws Exception {
    try (SessionPod a = new SessionPod(client, server, "c1", dir.resolve("a")).start();
        SessionPod b = new SessionPod(client, server, "c2", dir.resolve("b")).start()) {
      SessionSandbox first = open("c1", "10.43.0.31");
      SessionSandbox second = open("c2", "10.43.0.32");
      for (var row : List.of(Map.entry(first, List.of(a, b)), Map.entry(second, List.of(b, a)))) {
        SessionSandbox session = row.getKey();
        SessionPod own = row.getValue().get(0);
        SessionPod other = row.getValue().get(1);
        Output where = new Output();
        KubernetesSessionTest.run(session, 1, "pwd -P", where);
        assertThat(where.out().strip())
            .as("the step's folder is its own pod's workspace")
            .isEqualTo(own.workspace.toRealPath().toString());
        Output ancestry = new Output();
        KubernetesSessionTest.run(session, 2, ANCESTRY, ancestry);
        List<Long> pids = ancestry.out().lines().map(Long::parseLong).toList();
        assertThat(pids).as("the step's pid and its parents").hasSizeGreaterThan(1);
        assertThat(pids.get(1))
            .as("the step's parent is its own pod's runner")
            .isEqualTo(own.runner().pid());
        assertThat(pids).doesNotContain(other.runner().pid());
        KubernetesSessionTest.run(session, 3, "touch marker-$AGENT_SANDBOX_RUN_ID", new Output());
      }
      assertThat(names(a.workspace)).containsExactly("marker-c1", "out");
      assertThat(names(b.workspace)).containsExactly("marker-c2", "out");
      for (SessionSandbox session : List.of(first, second)) {
        close(session);
      }
    }
    List<String> requests = new ArrayList<>();
    RecordedRequest request;
    while ((request = server.takeRequest(10, TimeUnit.MILLISECONDS)) != null) {
      requests.add(request.getMethod() + " " + request.getPath());
    }
    assertThat(requests).as("the API requests of both sessions").isNotEmpty();
    assertThat(requests)
        .as("no request runs anything in a pod or reaches one through the API server")
        .noneMatch(line -> REACHES_INTO_A_POD.matcher(line.split("\\?", 2)[0]).find());
    assertThat(requests)
        .as("the relays' logs were read, the runner's log never")
        .anyMatch(line -> line.contains("container=" + SessionContainers.RELAY))
        .noneMatch(line -> AGENT_LOG.matcher(line).find());
  }

  @Test
  void noPathLeavesTheWorkspaceNeitherWrittenSoNorThroughALinkAStepMade() throws Exception {
    Path outside = Files.createDirectories(dir.resolve("outside"));
    String secret = "not-for-the-session-" + System.nanoTime();
    Files.writeString(outside.resolve("secret.txt"), secret);
    try (SessionPod pod = new SessionPod(client, server, "c3", dir.resolve("pod")).start()) {
      SessionSandbox session = open("c3", "10.43.0.33");
      assertThat(
              KubernetesSessionTest.run(
                      session,
                      1,
                      "ln -s "
                          + outside
                          + " dir-link && ln -s "
                          + outside.resolve("secret.txt")
                          + " file-link && ln -s / root-link",
                      new Output())
                  .exitStatus())
          .hasValue(0);
      Map<String, Runnable> links = new TreeMap<>();
      links.put("read through a link", () -> read(session, "dir-link/secret.txt"));
      links.put("read a link to a file", () -> read(session, "file-link"));
      links.put("read through a link to /", () -> read(session, "root-link/etc/hostname"));
      links.put("put through a link", () -> put(session, "dir-link/evil"));
      links.put("put onto a link", () -> put(session, "file-link"));
      links.put("list through a link", () -> session.list(WorkspacePath.parse("dir-link"), 10));
      links.put(
          "stat through a link", () -> session.stat(WorkspacePath.parse("dir-link/secret.txt")));
      links.put(
          "archive a link",
          () ->
              session.readFolder(
                  WorkspacePath.parse("dir-link"), new ByteArrayOutputStream(), 1 << 20));
      links.put(
          "extract under a link",
          () ->
              session.putArchive(
                  WorkspacePath.parse("dir-link"),
                  new ByteArrayInputStream(tar("evil", "x")),
                  1 << 20));
      links.put(
          "a step's cwd through a link",
          () ->
              session.exec(
                  new StepSpec(
                      2, List.of("touch", "evil"), Map.of(), WorkspacePath.parse("dir-link"), null),
                  new Output()));
      links.forEach(
          (name, row) ->
              assertThat(catchThrowable(row::run))
                  .as(name)
                  .isInstanceOfSatisfying(
                      PathRefusedException.class,
                      e -> assertThat(e.reason()).isEqualTo(PathRefusedException.Reason.SYMLINK)));
      for (String written : List.of("../outside/secret.txt", "/etc/hostname", "a/../../x", "..")) {
        assertThat(catchThrowable(() -> read(session, written)))
            .as(written)
            .isInstanceOf(InvalidWorkspacePathException.class);
      }
      // The whole workspace as a tar carries the links as links, never what they point to.
      ByteArrayOutputStream whole = new ByteArrayOutputStream();
      session.readFolder(WorkspacePath.root(), whole, 1 << 20);
      assertThat(whole.toString(StandardCharsets.ISO_8859_1)).doesNotContain(secret);
      close(session);
    }
    assertThat(names(outside)).containsExactly("secret.txt");
    assertThat(Files.readString(outside.resolve("secret.txt"))).isEqualTo(secret);
  }

  private static void read(SessionSandbox session, String path) {
    session.readFile(WorkspacePath.parse(path), new ByteArrayOutputStream(), 1 << 20);
  }

  private static void put(SessionSandbox session, String path) {
    session.putFile(WorkspacePath.parse(path), new ByteArrayInputStream(new byte[] {'x'}), 10);
  }

  private static byte[] tar(String name, String content) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream out = new TarArchiveOutputStream(bytes)) {
      byte[] data = content.getBytes(StandardCharsets.UTF_8);
      TarArchiveEntry entry = new TarArchiveEntry(name);
      entry.setSize(data.length);
      out.putArchiveEntry(entry);
      out.write(data);
      out.closeArchiveEntry();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  private static List<String> names(Path folder) throws Exception {
    try (Stream<Path> entries = Files.list(folder)) {
      return entries.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  /** Closes the session as the run service does: kill, await its end, tear down. */
  private static void close(SessionSandbox session) throws Exception {
    CompletableFuture<Completion> ended =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return session.await(Instant.now().plusSeconds(120));
              } catch (InterruptedException e) {
                throw new IllegalStateException(e);
              }
            });
    session.kill();
    assertThat(ended.get(120, TimeUnit.SECONDS).end()).isEqualTo(Completion.End.KILLED);
    session.teardown();
    assertThat(client.namespaces().withName(BundleFactory.namespaceOf(session.runId())).get())
        .isNull();
  }
}
