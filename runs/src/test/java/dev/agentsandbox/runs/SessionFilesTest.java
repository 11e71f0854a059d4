package dev.agentsandbox.runs;

import static dev.agentsandbox.runs.SessionFixture.ACTOR;
import static dev.agentsandbox.runs.SessionFixture.open;
import static dev.agentsandbox.runs.SessionFixture.run;
import static dev.agentsandbox.runs.SessionFixture.sh;
import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.SessionLimits;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.runs.session.FileForm;
import dev.agentsandbox.runs.session.FileRead;
import dev.agentsandbox.runs.session.FileWritten;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import dev.agentsandbox.store.AuditRow;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Files into and out of a session: a file and a tar in, a file, a folder's tar and a listing out,
 * each with its size and SHA-256 in its audit row and never its content; every way a path could
 * leave {@code /workspace} refused, as written or as found (links planted by the workload
 * included); hostile archives refused whole with nothing written; the agent's cap both ways.
 */
class SessionFilesTest {
  @TempDir Path temp;
  SessionFixture f;
  RunService service;
  String id;

  @BeforeEach
  void open_() {
    f = new SessionFixture(temp);
  }

  @AfterEach
  void close_() throws Exception {
    if (id != null && service.view(id).record().status().active()) {
      service.sessions().close(ACTOR, id);
    }
    f.close();
  }

  private void start() throws Exception {
    service = f.service();
    id = service.sessions().open(ACTOR, AgentGrant.EVERY, open()).record().runId();
  }

  private Path workspace() {
    return f.backend.session(id).folder();
  }

  private FileWritten put(String path, byte[] body) {
    return service
        .sessions()
        .put(ACTOR, id, path, false, new ByteArrayInputStream(body), body.length);
  }

  private FileWritten putTar(String path, byte[] tar) {
    return service.sessions().put(ACTOR, id, path, true, new ByteArrayInputStream(tar), tar.length);
  }

  private SessionRefusedException refused(Runnable attempt) {
    try {
      attempt.run();
    } catch (SessionRefusedException e) {
      return e;
    }
    throw new AssertionError("not refused");
  }

  private static String sha256(byte[] bytes) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
  }

  interface Entries {
    void write(TarArchiveOutputStream tar) throws IOException;
  }

  static byte[] tar(Entries entries) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      entries.write(tar);
    }
    return bytes.toByteArray();
  }

  static void file(TarArchiveOutputStream tar, String name, String content, int mode)
      throws IOException {
    byte[] bytes = content.getBytes(StandardCharsets.UTF_8);
    // preserveAbsolutePath: the writer would otherwise strip a leading slash the attack needs.
    TarArchiveEntry e = new TarArchiveEntry(name, true);
    e.setSize(bytes.length);
    e.setMode(mode);
    tar.putArchiveEntry(e);
    tar.write(bytes);
    tar.closeArchiveEntry();
  }

  @Test
  void aFileGoesInWholeAndComesBackWithItsHashAndItsRowsCarryNoContent() throws Exception {
    start();
    byte[] body = "print('hello from the agent')\n".getBytes(StandardCharsets.UTF_8);

    FileWritten written = put("app/main.py", body);

    assertThat(written.path()).isEqualTo("/workspace/app/main.py");
    assertThat(written.size()).isEqualTo(body.length);
    assertThat(written.sha256()).isEqualTo(sha256(body));
    assertThat(Files.readAllBytes(workspace().resolve("app/main.py"))).isEqualTo(body);
    assertThat(run(service, id, sh("cat app/main.py")).output().orElseThrow().stdout())
        .isEqualTo(new String(body, StandardCharsets.UTF_8));
    try (FileRead read =
        service.sessions().get(ACTOR, id, "/workspace/app/main.py", FileForm.FILE)) {
      FileRead.Bytes bytes = (FileRead.Bytes) read;
      try (InputStream in = bytes.open()) {
        assertThat(in.readAllBytes()).isEqualTo(body);
      }
      assertThat(bytes.sha256()).isEqualTo(written.sha256());
    }
    List<AuditRow> rows = f.audit(EventType.FILES.wireName(), id);
    assertThat(rows).extracting(r -> r.data().get("op").asText()).containsExactly("put", "get");
    assertThat(rows)
        .allSatisfy(r -> assertThat(r.data().get("sha256").asText()).isEqualTo(sha256(body)));
    assertThat(rows.toString()).doesNotContain("hello from the agent");
  }

  @Test
  void aProjectGoesInAsATarAndAFolderComesOutAsATarWithoutItsLinks() throws Exception {
    start();
    byte[] project =
        tar(
            t -> {
              file(t, "./src/calc.py", "def add(a, b):\n    return a + b\n", 0644);
              file(t, "./run.sh", "#!/bin/sh\necho ran\n", 0755);
            });

    FileWritten written = putTar("proj", project);

    assertThat(written.folder()).isTrue();
    assertThat(written.files()).isEqualTo(2);
    assertThat(written.sha256()).isEqualTo(sha256(project));
    assertThat(
            run(
                    service,
                    id,
                    new dev.agentsandbox.runs.session.ExecRequest(
                        List.of("./run.sh"), Map.of(), "proj", "", 60, false))
                .output()
                .orElseThrow()
                .stdout())
        .as("the executable bit came with it")
        .isEqualTo("ran\n");
    run(service, id, sh("ln -s /etc proj/etc-link"));
    try (FileRead read = service.sessions().get(ACTOR, id, "proj", FileForm.TAR)) {
      FileRead.Bytes tar = (FileRead.Bytes) read;
      assertThat(tar.tar()).isTrue();
      assertThat(tar.skipped()).isEqualTo(1);
      List<String> names = new ArrayList<>();
      try (TarArchiveInputStream in = new TarArchiveInputStream(tar.open())) {
        TarArchiveEntry e;
        while ((e = in.getNextEntry()) != null) {
          names.add(e.getName());
        }
      }
      assertThat(names).containsExactlyInAnyOrder("run.sh", "src/", "src/calc.py");
    }
    try (FileRead read = service.sessions().get(ACTOR, id, "proj", FileForm.LISTING)) {
      FileRead.Listing listing = (FileRead.Listing) read;
      assertThat(listing.entries())
          .extracting(e -> e.path().name())
          .containsExactly("etc-link", "run.sh", "src");
      assertThat(listing.entries())
          .extracting(PathInfo::kind)
          .containsExactly(PathInfo.Kind.SYMLINK, PathInfo.Kind.FILE, PathInfo.Kind.FOLDER);
    }
    assertThat(refused(() -> service.sessions().get(ACTOR, id, "proj", FileForm.FILE)).error())
        .isEqualTo(SessionError.NOT_ACCEPTABLE);
  }

  static Stream<Arguments> pathsOutsideTheWorkspace() {
    return Stream.of(
        Arguments.of("an absolute path elsewhere", "/etc/passwd"),
        Arguments.of("a name that starts like the workspace", "/workspacex/secret"),
        Arguments.of("a .. climbing out", "../outside"),
        Arguments.of("a .. in the middle", "a/../../b"),
        Arguments.of("a . segment", "a/./b"),
        Arguments.of("an empty segment", "a//b"),
        Arguments.of("a control character", "a\nb"),
        Arguments.of("a segment over 255 bytes", "x".repeat(256)),
        Arguments.of("a path over 4096 bytes", "a/".repeat(2049)));
  }

  @ParameterizedTest(name = "{0} is refused as written, both ways, nothing touched")
  @MethodSource("pathsOutsideTheWorkspace")
  void pathsOutsideTheWorkspaceAreRefusedAsWritten(String why, String path) throws Exception {
    start();
    assertThat(refused(() -> put(path, new byte[] {1})).error())
        .isEqualTo(SessionError.INVALID_PATH);
    assertThat(refused(() -> service.sessions().get(ACTOR, id, path, FileForm.FILE)).error())
        .isEqualTo(SessionError.INVALID_PATH);
    assertThat(f.audit(EventType.FILES.wireName(), id))
        .allSatisfy(r -> assertThat(r.data().get("error").asText()).isEqualTo("invalid_path"));
    try (Stream<Path> all = Files.list(workspace())) {
      assertThat(all).isEmpty();
    }
  }

  static Stream<Arguments> linksTheWorkloadPlants() {
    return Stream.of(
        Arguments.of(
            "a link to a host folder, written through", "ln -s /tmp escape", "escape/planted.txt"),
        Arguments.of("a link to a host file, overwritten", "ln -s /etc/hostname host", "host"),
        Arguments.of(
            "a link inside the workspace, still never followed",
            "mkdir real && ln -s real alias",
            "alias/x"),
        Arguments.of("a link deeper in the path", "mkdir -p a/b && ln -s /tmp a/b/c", "a/b/c/d/e"));
  }

  @ParameterizedTest(name = "{0}: refused as found")
  @MethodSource("linksTheWorkloadPlants")
  void linksTheWorkloadPlantsAreNeverFollowed(String why, String plant, String path)
      throws Exception {
    start();
    run(service, id, sh(plant));

    SessionRefusedException put =
        refused(() -> put(path, "owned".getBytes(StandardCharsets.UTF_8)));
    SessionRefusedException get =
        refused(() -> service.sessions().get(ACTOR, id, path, FileForm.FILE));

    assertThat(put.error()).isEqualTo(SessionError.PATH_REFUSED);
    assertThat(put.reason()).contains("symlink");
    assertThat(get.error()).isIn(SessionError.PATH_REFUSED);
    assertThat(Files.exists(Path.of("/tmp/planted.txt"))).isFalse();
    assertThat(f.audit(EventType.FILES.wireName(), id).get(0).data().get("reason").asText())
        .isEqualTo("symlink");
  }

  static Stream<Arguments> hostileArchives() {
    return Stream.of(
        Arguments.of(
            "a symlink entry",
            (Entries)
                t -> {
                  TarArchiveEntry link = new TarArchiveEntry("up", TarConstants.LF_SYMLINK);
                  link.setLinkName("/etc");
                  t.putArchiveEntry(link);
                  t.closeArchiveEntry();
                },
            "symlink"),
        Arguments.of(
            "a .. entry", (Entries) t -> file(t, "../../escape.txt", "x", 0644), "invalid_path"),
        Arguments.of(
            "an absolute entry",
            (Entries) t -> file(t, "/etc/cron.d/x", "x", 0644),
            "invalid_path"),
        Arguments.of(
            "a device",
            (Entries)
                t -> {
                  t.putArchiveEntry(new TarArchiveEntry("mem", TarConstants.LF_CHR));
                  t.closeArchiveEntry();
                },
            "device"),
        Arguments.of(
            "a name twice", (Entries) t -> file(t, "good.txt", "second", 0644), "conflict"));
  }

  @ParameterizedTest(name = "{0} refuses the whole archive and writes nothing")
  @MethodSource("hostileArchives")
  void hostileArchivesAreRefusedWhole(String why, Entries hostile, String reason) throws Exception {
    start();
    byte[] archive =
        tar(
            t -> {
              file(t, "good.txt", "written before the bad entry", 0644);
              hostile.write(t);
              file(t, "after.txt", "after", 0644);
            });

    SessionRefusedException e = refused(() -> putTar("proj", archive));

    assertThat(e.error()).isEqualTo(SessionError.INVALID_ARCHIVE);
    assertThat(e.reason()).contains(reason);
    assertThat(Files.exists(workspace().resolve("proj"))).as("nothing of it was written").isFalse();
    AuditRow row = f.audit(EventType.FILES.wireName(), id).get(0);
    assertThat(row.data().get("error").asText()).isEqualTo("invalid_archive");
  }

  @Test
  void theAgentsFileCapHoldsBothWays() throws Exception {
    f.limits = new SessionLimits(1024, SessionLimits.DEFAULT.maxStdinBytes());
    start();

    assertThat(put("fits.bin", new byte[1024]).size()).isEqualTo(1024);
    SessionRefusedException declared = refused(() -> put("big.bin", new byte[1025]));
    SessionRefusedException undeclared =
        refused(
            () ->
                service
                    .sessions()
                    .put(
                        ACTOR, id, "big.bin", false, new ByteArrayInputStream(new byte[5000]), -1));
    SessionRefusedException archive =
        refused(
            () ->
                service
                    .sessions()
                    .put(ACTOR, id, "d", true, new ByteArrayInputStream(new byte[4096]), -1));
    run(
        service,
        id,
        sh(
            "head -c 2000 /dev/zero > made.bin; mkdir big && head -c 800 /dev/zero > big/a && head -c 800 /dev/zero > big/b"));
    SessionRefusedException file =
        refused(() -> service.sessions().get(ACTOR, id, "made.bin", FileForm.FILE));
    SessionRefusedException folder =
        refused(() -> service.sessions().get(ACTOR, id, "big", FileForm.TAR));

    for (SessionRefusedException e : List.of(declared, undeclared, archive, file, folder)) {
      assertThat(e.error()).isEqualTo(SessionError.FILE_TOO_LARGE);
    }
    assertThat(Files.exists(workspace().resolve("big.bin"))).isFalse();
    try (Stream<Path> leftovers = Files.list(workspace())) {
      assertThat(leftovers.map(p -> p.getFileName().toString()))
          .doesNotContain("d")
          .noneMatch(n -> n.endsWith(".part"));
    }
    try (Stream<Path> spooled = Files.list(temp)) {
      assertThat(spooled.map(p -> p.getFileName().toString()))
          .noneMatch(n -> n.startsWith("agent-sandbox-"));
    }
  }

  @Test
  void nothingIsThereAndTheWrongKindAreTold() throws Exception {
    start();
    run(service, id, sh("mkdir folder; mkfifo pipe"));

    assertThat(
            refused(() -> service.sessions().get(ACTOR, id, "missing.txt", FileForm.FILE)).error())
        .isEqualTo(SessionError.FILE_NOT_FOUND);
    SessionRefusedException overFolder = refused(() -> put("folder", new byte[] {1}));
    assertThat(overFolder.error()).isEqualTo(SessionError.PATH_REFUSED);
    assertThat(overFolder.reason()).contains("wrong-kind");
    SessionRefusedException fifo =
        refused(() -> service.sessions().get(ACTOR, id, "pipe", FileForm.FILE));
    assertThat(fifo.reason()).contains("not-regular");
  }

  @Test
  void aFileOperationRestartsTheIdleClock() throws Exception {
    service = f.service();
    id = service.sessions().open(ACTOR, AgentGrant.EVERY, open(Map.of(), 2)).record().runId();
    for (int i = 0; i < 4; i++) {
      Thread.sleep(1000);
      put("tick.txt", new byte[] {(byte) i});
    }
    assertThat(service.view(id).record().status().active())
        .as("four seconds of puts a second apart kept a 2-second idle session open")
        .isTrue();
  }
}
