package dev.agentsandbox.proxy;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;

/** Where {@code curl} is on this machine: the first executable on {@code PATH}. */
final class Curl {
  private Curl() {}

  /**
   * The path of {@code curl}.
   *
   * @throws IllegalStateException naming the directories searched when there is none
   */
  static String path() {
    String searchPath = Objects.requireNonNullElse(System.getenv("PATH"), "");
    return Arrays.stream(searchPath.split(File.pathSeparator))
        .filter(dir -> !dir.isEmpty())
        .map(dir -> Path.of(dir, "curl"))
        .filter(Files::isExecutable)
        .findFirst()
        .map(Path::toString)
        .orElseThrow(
            () ->
                new IllegalStateException(
                    "finding curl on PATH "
                        + searchPath
                        + ": no executable curl (scripts/install-host.sh installs it)"));
  }
}
