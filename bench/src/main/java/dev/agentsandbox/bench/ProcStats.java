package dev.agentsandbox.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** CPU time and resident memory of one process, read from Linux {@code /proc}. */
final class ProcStats {
  private ProcStats() {}

  /**
   * User plus system CPU time in clock ticks from a {@code /proc/PID/stat} line.
   *
   * <p>The command name (field 2) is in parentheses and may itself contain spaces and parentheses,
   * so fields are counted from the last closing parenthesis (proc(5)).
   */
  static long cpuTicks(String statLine) {
    int close = statLine.lastIndexOf(')');
    if (close < 0) {
      throw new IllegalArgumentException("not a /proc/PID/stat line: no ')' after the command");
    }
    String[] fields = statLine.substring(close + 1).trim().split("\\s+");
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    if (fields.length < 13) {
      throw new IllegalArgumentException("not a /proc/PID/stat line: too few fields");
    }
    return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
  }

  /** The {@code VmRSS} value in KiB from the text of a {@code /proc/PID/status} file. */
  static long rssKib(String statusText) {
    for (String line : statusText.split("\n")) {
      if (line.startsWith("VmRSS:")) {
        String value = line.substring("VmRSS:".length()).trim();
        if (!value.endsWith("kB")) {
          throw new IllegalArgumentException("unexpected VmRSS unit: " + line);
        }
        return Long.parseLong(value.substring(0, value.length() - 2).trim());
      }
    }
    throw new IllegalArgumentException("no VmRSS line (is the process a zombie?)");
  }

  /** Reads the CPU ticks used so far by a live process. */
  static long cpuTicks(long pid) {
    return cpuTicks(read(Path.of("/proc", Long.toString(pid), "stat")));
  }

  /** Reads the resident set size of a live process, in KiB. */
  static long rssKib(long pid) {
    return rssKib(read(Path.of("/proc", Long.toString(pid), "status")));
  }

  private static String read(Path path) {
    try {
      return Files.readString(path, StandardCharsets.ISO_8859_1);
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + path + " failed (has the process exited?)", e);
    }
  }
}
