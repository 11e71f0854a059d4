package dev.agentsandbox.bench;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Collects one formatted value per metric and target and renders the side-by-side table. */
final class Report {

  /** The table's rows, in the order the report shows them. */
  enum Metric {
    START_TO_READY("start to ready, median / max (ms)"),
    IDLE_RSS("RSS idle after start (MiB)"),
    SETUP_ALLOWED("CONNECT set-up allowed, p50 / p99 (µs)"),
    SETUP_REFUSED("CONNECT refused (403), p50 / p99 (µs)"),
    THROUGHPUT_1("tunnel throughput, 1 stream (MB/s)"),
    THROUGHPUT_1_SHARE("… of direct loopback, 1 stream"),
    CPU_PER_GB_1("proxy CPU per GB, 1 stream (s)"),
    THROUGHPUT_16("tunnel throughput, 16 streams (MB/s)"),
    THROUGHPUT_16_SHARE("… of direct loopback, 16 streams"),
    CPU_PER_GB_16("proxy CPU per GB, 16 streams (s)"),
    HTTP_RATE("plain HTTP, 8 keep-alive clients (req/s)"),
    HTTP_CONNECTIONS("… client connections opened"),
    HTTP_UPSTREAM_CONNECTIONS("… upstream connections opened"),
    IDLE_SMALL("RSS with N₁ idle tunnels (MiB)"),
    IDLE_SMALL_PER_TUNNEL("… per idle tunnel (KiB)"),
    IDLE_LARGE("RSS with N₂ idle tunnels (MiB)"),
    IDLE_LARGE_PER_TUNNEL("… per idle tunnel (KiB)"),
    IDLE_ALIVE("idle tunnels alive when probed"),
    RSS_AFTER("RSS after the run, tunnels closed (MiB)");

    final String label;

    Metric(String label) {
      this.label = label;
    }
  }

  private final Map<String, Map<Metric, String>> values = new LinkedHashMap<>();
  private final List<String> notes = new ArrayList<>();

  void target(String target) {
    values.computeIfAbsent(target, t -> new EnumMap<>(Metric.class));
  }

  void put(String target, Metric metric, String value) {
    values.computeIfAbsent(target, t -> new EnumMap<>(Metric.class)).put(metric, value);
    System.err.println("  " + target + " | " + metric.label + " | " + value);
  }

  void note(String note) {
    notes.add(note);
    System.err.println("  note: " + note);
  }

  String markdown(int smallStage, int largeStage) {
    StringBuilder table = new StringBuilder("| metric |");
    StringBuilder rule = new StringBuilder("|---|");
    for (String target : values.keySet()) {
      table.append(' ').append(target).append(" |");
      rule.append("---:|");
    }
    table.append('\n').append(rule).append('\n');
    for (Metric metric : Metric.values()) {
      String label =
          metric
              .label
              .replace("N₁", Integer.toString(smallStage))
              .replace("N₂", Integer.toString(largeStage));
      table.append("| ").append(label).append(" |");
      for (Map<Metric, String> column : values.values()) {
        table.append(' ').append(column.getOrDefault(metric, "–")).append(" |");
      }
      table.append('\n');
    }
    for (String note : notes) {
      table.append("\n- ").append(note);
    }
    return table.append('\n').toString();
  }

  static String fixed(double value, int decimals) {
    return String.format(Locale.ROOT, "%." + decimals + "f", value);
  }

  static String micros(long nanos) {
    return fixed(nanos / 1000.0, 0);
  }

  static String mib(long kib) {
    return fixed(kib / 1024.0, 1);
  }
}
