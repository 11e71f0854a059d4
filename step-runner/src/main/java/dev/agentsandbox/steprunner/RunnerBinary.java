package dev.agentsandbox.steprunner;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The step runner's static x86-64 binary, built from {@code src/main/c} by this module's build
 * ({@code gcc -static -O2 -Wall -Wextra -Werror}) and shipped as a resource of its jar.
 */
public final class RunnerBinary {
  /** The resource's name beside this class, and the program's name. */
  public static final String NAME = "asb-step-runner";

  private RunnerBinary() {}

  /** The binary's bytes. */
  public static byte[] bytes() {
    try (InputStream in = RunnerBinary.class.getResourceAsStream(NAME)) {
      if (in == null) {
        throw new IllegalStateException(
            NAME
                + " is missing from the step runner's jar (built by ./mvnw -pl step-runner package;"
                + " it needs gcc and glibc's static library)");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Writes the binary into {@code dir} (mode 0755) and returns its path. */
  public static Path extractTo(Path dir) {
    try {
      Path target = dir.resolve(NAME);
      Files.write(target, bytes());
      Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwxr-xr-x"));
      return target;
    } catch (IOException e) {
      throw new UncheckedIOException("writing " + NAME + " into " + dir, e);
    }
  }
}
