package dev.agentsandbox.backend.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Which paths a client may name in a session, as a table of named cases. */
class WorkspacePathTest {
  record Accepted(String name, String text, String absolute) {}

  record Refused(String name, String text, String because) {}

  private static final List<Accepted> ACCEPTED =
      List.of(
          new Accepted("the workspace by its absolute name", "/workspace", "/workspace"),
          new Accepted("the workspace with a trailing slash", "/workspace/", "/workspace"),
          new Accepted("the workspace as .", ".", "/workspace"),
          new Accepted("the workspace as the empty path", "", "/workspace"),
          new Accepted("an absolute path inside", "/workspace/src/app.py", "/workspace/src/app.py"),
          new Accepted("a relative path", "src/app.py", "/workspace/src/app.py"),
          new Accepted("a relative path with ./", "./src/app.py", "/workspace/src/app.py"),
          new Accepted("a folder with a trailing slash", "src/", "/workspace/src"),
          new Accepted(
              "the outputs folder", "/workspace/out/report.txt", "/workspace/out/report.txt"),
          new Accepted("a dotfile", ".gitignore", "/workspace/.gitignore"),
          new Accepted("three dots are a name", "...", "/workspace/..."),
          new Accepted("a non-ASCII name", "données/été.txt", "/workspace/données/été.txt"),
          new Accepted("a name with a backslash", "a\\b", "/workspace/a\\b"));

  private static final List<Refused> REFUSED =
      List.of(
          new Refused("an absolute path outside", "/etc/passwd", "outside /workspace"),
          new Refused("a sibling sharing the prefix", "/workspacefoo/x", "outside /workspace"),
          new Refused("the root", "/", "outside /workspace"),
          new Refused("a dot-dot escape", "../etc/passwd", ".. segment"),
          new Refused("a dot-dot inside an absolute path", "/workspace/../etc", ".. segment"),
          new Refused("a dot-dot that would stay inside", "src/../app.py", ".. segment"),
          new Refused("a trailing dot-dot", "src/..", ".. segment"),
          new Refused("an inner dot segment", "src/./app.py", ". segment"),
          new Refused("a doubled slash", "src//app.py", "empty segment"),
          new Refused("a doubled slash after the prefix", "/workspace//etc", "empty segment"),
          new Refused("a NUL byte", "app.py\0.txt", "control character"),
          new Refused("a newline", "app\n.py", "control character"),
          new Refused("an escape character", "\u001b[2Japp", "control character"),
          new Refused("a DEL character", "app\u007f", "control character"),
          new Refused("a segment over 255 bytes", "a".repeat(256), "longer than 255"),
          new Refused("a path over 4096 bytes", "a/".repeat(2049), "longer than 4096"));

  @Test
  void acceptedPaths() {
    for (Accepted c : ACCEPTED) {
      assertThat(WorkspacePath.parse(c.text()).absolute()).as(c.name()).isEqualTo(c.absolute());
    }
  }

  @Test
  void refusedPaths() {
    for (Refused c : REFUSED) {
      assertThatThrownBy(() -> WorkspacePath.parse(c.text()))
          .as(c.name())
          .isInstanceOf(InvalidWorkspacePathException.class)
          .hasMessageContaining(c.because());
    }
  }

  @Test
  void aRefusalQuotesThePathPrintably() {
    assertThatThrownBy(() -> WorkspacePath.parse("x\u001b]52;c;AAAA\u0007"))
        .hasMessageNotContaining("\u001b")
        .hasMessageNotContaining("\u0007");
  }

  @Test
  void segmentsBuiltInCodeAreCheckedToo() {
    assertThatThrownBy(() -> new WorkspacePath(List.of("src", "..")))
        .isInstanceOf(InvalidWorkspacePathException.class);
    assertThatThrownBy(() -> new WorkspacePath(List.of("a/b")))
        .isInstanceOf(InvalidWorkspacePathException.class);
  }

  @Test
  void relativeParentAndResolve() {
    WorkspacePath p = WorkspacePath.parse("src/pkg/app.py");
    assertThat(p.relative()).isEqualTo("src/pkg/app.py");
    assertThat(p.name()).isEqualTo("app.py");
    assertThat(p.parent().absolute()).isEqualTo("/workspace/src/pkg");
    assertThat(WorkspacePath.root().relative()).isEqualTo(".");
    assertThat(WorkspacePath.root().resolve(p)).isEqualTo(p);
    assertThatThrownBy(() -> WorkspacePath.root().parent())
        .isInstanceOf(IllegalStateException.class);
  }
}
