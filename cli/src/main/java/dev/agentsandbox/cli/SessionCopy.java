package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code agent-sandbox session cp}: files in and out of a session, as {@code docker cp}. */
@Command(
    name = "cp",
    mixinStandardHelpOptions = true,
    description = {
      "Copy files into or out of a session's /workspace, as docker cp copies them",
      "",
      "LOCAL ID:PATH puts a file at PATH, or a folder's content under PATH (sent as one tar, checked"
          + " whole by the server); ID:PATH LOCAL gets a file (into LOCAL, or LOCAL/NAME when LOCAL"
          + " is a folder) or a folder (unpacked into LOCAL, or LOCAL/NAME when LOCAL is a folder)."
          + " PATH is inside /workspace, absolute or relative to it. What comes out is checked"
          + " against the SHA-256 the server sends, and a folder's tar is read as hostile: no link"
          + " is written or followed, no name leaves LOCAL."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox session cp ./project $id:app",
      "  agent-sandbox session cp requirements.txt $id:app/requirements.txt",
      "  agent-sandbox session cp $id:app/coverage.xml .",
      "  agent-sandbox session cp $id:out ./results"
    })
final class SessionCopy implements Callable<Integer> {
  /** {@code ID:PATH}: a run id, a colon, a path. */
  private static final Pattern REMOTE = Pattern.compile("([a-z0-9]{1,32}):(.*)");

  @Spec CommandSpec spec;
  @Mixin ApiConnection api;

  @Parameters(index = "0", paramLabel = "SRC", description = "LOCAL or ID:PATH")
  String source;

  @Parameters(index = "1", paramLabel = "DST", description = "ID:PATH or LOCAL")
  String target;

  @Override
  public Integer call() throws IOException, InterruptedException {
    Matcher from = REMOTE.matcher(source);
    Matcher to = REMOTE.matcher(target);
    boolean fromRemote = from.matches() && !Files.exists(Path.of(source));
    boolean toRemote = to.matches() && !Files.exists(Path.of(target));
    if (fromRemote == toRemote) {
      throw new ParameterException(
          spec.commandLine(),
          "name one side as ID:PATH (the session) and the other as a local path");
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try (AdminApi client = api.open(spec)) {
      SessionClient sessions = new SessionClient(client, Terminal.detect(api.env));
      try {
        if (toRemote) {
          JsonNode written = put(sessions, Path.of(source), to.group(1), to.group(2), err);
          out.println(
              written.path("kind").asText().equals("folder")
                  ? "put "
                      + written.path("files").asInt()
                      + " files under "
                      + written.path("path").asText()
                  : "put "
                      + written.path("path").asText()
                      + " ("
                      + written.path("size").asLong()
                      + " bytes)");
        } else {
          out.println(get(sessions, from.group(1), from.group(2), Path.of(target)));
        }
        out.flush();
        return 0;
      } catch (ApiCallException | IOException e) {
        err.println("agent-sandbox session cp: " + e.getMessage());
        err.flush();
        return Main.FAILED;
      }
    }
  }

  /** Puts a local file or folder into the session; what the server wrote. */
  static JsonNode put(SessionClient sessions, Path local, String id, String path, PrintWriter err)
      throws IOException, InterruptedException {
    if (Files.isDirectory(local, LinkOption.NOFOLLOW_LINKS)) {
      Path tar = LocalArchive.pack(local, err);
      try {
        return sessions.put(
            id,
            path.isEmpty() ? "." : path,
            "application/x-tar",
            HttpRequest.BodyPublishers.ofFile(tar));
      } finally {
        Files.deleteIfExists(tar);
      }
    }
    if (!Files.isRegularFile(local, LinkOption.NOFOLLOW_LINKS)) {
      throw new IOException("put " + local + ": not a regular file or a folder");
    }
    String at = path.isEmpty() || path.endsWith("/") ? path + local.getFileName() : path;
    return sessions.putFile(id, at, local);
  }

  /** Gets a file or a folder out of the session into {@code local}; what was written, said. */
  static String get(SessionClient sessions, String id, String path, Path local)
      throws IOException, InterruptedException {
    HttpResponse<InputStream> response = sessions.get(id, path);
    boolean tar =
        response.headers().firstValue("Content-Type").orElse("").startsWith("application/x-tar");
    String expected = response.headers().firstValue("X-Agent-Sandbox-Sha256").orElse(null);
    String name = Path.of(path.isEmpty() ? "workspace" : path).getFileName().toString();
    Path spool = Files.createTempFile("agent-sandbox-cp-", tar ? ".tar" : ".part");
    try {
      MessageDigest sha = sha256();
      try (InputStream in = response.body();
          OutputStream file = new DigestOutputStream(Files.newOutputStream(spool), sha)) {
        in.transferTo(file);
      }
      String got = HexFormat.of().formatHex(sha.digest());
      if (expected != null && !expected.equals(got)) {
        throw new IOException(
            "get "
                + path
                + " from session "
                + id
                + ": its SHA-256 is "
                + got
                + ", the server said "
                + expected
                + " (nothing was written)");
      }
      boolean intoFolder = Files.isDirectory(local);
      Path at = intoFolder ? local.resolve(name) : local;
      if (tar) {
        int files = LocalArchive.unpack(spool, at);
        return "got " + files + " files into " + at;
      }
      if (Files.isSymbolicLink(at)) {
        throw new IOException(
            "get " + path + ": " + at + " is a link (nothing is written through one)");
      }
      Files.move(spool, at, StandardCopyOption.REPLACE_EXISTING);
      return "got " + at + " (" + Files.size(at) + " bytes)";
    } finally {
      Files.deleteIfExists(spool);
    }
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
