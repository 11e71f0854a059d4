package dev.agentsandbox.server.run;

import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.JMException;
import javax.management.ObjectName;

/**
 * Where this process's resident memory is, for a soak's samples: the kernel's view ({@code
 * /proc/self/smaps}: anonymous vs file-backed, glibc's malloc arenas), the JVM's (heap committed
 * and used, metaspace, code cache, classes, direct buffers) and, when the JVM runs with {@code
 * -XX:NativeMemoryTracking=summary}, Native Memory Tracking's committed size per category. Read
 * only when a soak asks for it ({@code -Dasb.soak.memory=true}); nothing here is asserted.
 */
final class MemoryBreakdown {
  private static final long ARENA = 64L * 1024 * 1024;
  private static final Pattern NMT_CATEGORY =
      Pattern.compile("^-\\s+([A-Za-z][A-Za-z ]*?) \\(reserved=\\d+KB, committed=(\\d+)KB");
  private static final Pattern SYSTEM_MAP_ROW =
      Pattern.compile(
          "^0x([0-9a-f]+)-0x([0-9a-f]+)\\s+\\d+\\s+(\\S+)\\s+(\\d+)\\s+\\d+\\s+(\\S+)\\s+"
              + "\\S+\\s+(\\S+)\\s+(.+)$");
  private static final Pattern NMT_TOTAL =
      Pattern.compile("^Total: reserved=\\d+KB, committed=(\\d+)KB");

  private MemoryBreakdown() {}

  /** One line: RSS split and the JVM's own pools, then NMT's committed KiB per category. */
  static String sample() {
    StringBuilder out = new StringBuilder();
    try {
      Maps maps = Maps.read();
      out.append("RSS ")
          .append(mib(maps.rss))
          .append(" (anon ")
          .append(mib(maps.anon))
          .append(", file ")
          .append(mib(maps.rss - maps.anon))
          .append("), malloc arenas ")
          .append(maps.arenas)
          .append(" holding ")
          .append(mib(maps.arenaRss))
          .append(" RSS, [heap] ")
          .append(mib(maps.brkHeapRss));
      if (maps.byInfo.size() > 2) {
        out.append(", RSS by mapping ").append(mibs(maps.byInfo));
      }
    } catch (IOException e) {
      out.append("smaps unreadable: ").append(e.getMessage());
    }
    Runtime rt = Runtime.getRuntime();
    out.append("; Java heap committed ")
        .append(mib(rt.totalMemory() / 1024))
        .append(", used ")
        .append(mib((rt.totalMemory() - rt.freeMemory()) / 1024));
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.NON_HEAP) {
        out.append(", ")
            .append(pool.getName())
            .append(' ')
            .append(mib(pool.getUsage().getCommitted() / 1024));
      }
    }
    out.append(", classes ")
        .append(ManagementFactory.getClassLoadingMXBean().getLoadedClassCount());
    for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
      out.append(", ")
          .append(pool.getName())
          .append(" buffers ")
          .append(pool.getCount())
          .append(" = ")
          .append(mib(pool.getMemoryUsed() / 1024));
    }
    Map<String, Long> nmt = nmtCommittedKib();
    if (!nmt.isEmpty()) {
      out.append("; NMT committed KiB ").append(nmt);
    }
    return out.toString();
  }

  /** NMT's committed KiB per category ("Total" first), empty when NMT is off. */
  static Map<String, Long> nmtCommittedKib() {
    Map<String, Long> categories = new LinkedHashMap<>();
    String summary = nmt("summary");
    for (String line : summary.split("\n")) {
      Matcher total = NMT_TOTAL.matcher(line.strip());
      if (total.find()) {
        categories.put("Total", Long.parseLong(total.group(1)));
        continue;
      }
      Matcher category = NMT_CATEGORY.matcher(line.strip());
      if (category.find()) {
        categories.put(category.group(1), Long.parseLong(category.group(2)));
      }
    }
    return categories;
  }

  /**
   * Runs {@code jcmd <self> VM.native_memory <argument>} through the JVM's own diagnostic command
   * bean ({@code summary}, {@code baseline}, {@code summary.diff}); "" when NMT is off.
   */
  static String nmt(String argument) {
    String text = diagnostic("vmNativeMemory", new String[] {argument});
    return text.contains("not enabled") ? "" : text;
  }

  /** {@code jcmd <self> System.map}: every mapping with what the JVM put there; "" without NMT. */
  static String systemMapText() {
    return diagnostic("systemMap", new String[0]);
  }

  /**
   * {@code jcmd <self> System.trim_native_heap}: has glibc return the free memory it keeps in its
   * arenas, and says how much RSS that gave back (what a periodic trim would have saved).
   */
  static String trimNativeHeap() {
    return diagnostic("systemTrimNativeHeap", new String[0]).strip();
  }

  /** A {@code jcmd} command run on this JVM through its diagnostic command bean; "" on failure. */
  private static String diagnostic(String operation, String[] arguments) {
    try {
      Object answer =
          ManagementFactory.getPlatformMBeanServer()
              .invoke(
                  new ObjectName("com.sun.management:type=DiagnosticCommand"),
                  operation,
                  new Object[] {arguments},
                  new String[] {String[].class.getName()});
      return answer == null ? "" : answer.toString();
    } catch (JMException | RuntimeException e) {
      return "";
    }
  }

  private static Map<String, String> mibs(Map<String, Long> kib) {
    Map<String, String> out = new LinkedHashMap<>();
    kib.forEach((k, v) -> out.put(k, String.format("%.1f", v / 1024.0)));
    return out;
  }

  private static String mib(long kib) {
    return String.format("%.1f MiB", kib / 1024.0);
  }

  /**
   * Sums over this process's mappings: from {@code jcmd System.map} when NMT is on (each mapping
   * labelled with what the JVM put there: JAVAHEAP, CODE, META, CLASS, STACK, GC, CDS...), from
   * {@code /proc/self/smaps} otherwise (no labels).
   */
  private record Maps(
      long rss, long anon, int arenas, long arenaRss, long brkHeapRss, Map<String, Long> byInfo) {
    static Maps read() throws IOException {
      List<Mapping> mappings = systemMap();
      if (mappings.isEmpty()) {
        mappings = smaps();
      }
      long rss = 0;
      long anon = 0;
      long brk = 0;
      Map<String, Long> byInfo = new TreeMap<>();
      for (Mapping m : mappings) {
        rss += m.rss;
        anon += m.anon;
        if (m.name.equals("[heap]")) {
          brk += m.rss;
        }
        String key =
            !m.info.equals("-")
                ? m.info.replaceFirst("^STACK-.*", "STACK")
                : m.name.isEmpty() || m.name.startsWith("[") ? "other anon" : "other file";
        byInfo.merge(key, m.rss, Long::sum);
      }
      // A glibc arena other than the main one is a 64 MiB-aligned reservation of 64 MiB of
      // anonymous memory: a read-write head (what it has grown to) and an inaccessible rest.
      int arenas = 0;
      long arenaRss = 0;
      for (int i = 0; i < mappings.size(); i++) {
        Mapping head = mappings.get(i);
        if (!head.name.isEmpty()
            || !head.info.equals("-")
            || head.start % ARENA != 0
            || !head.perms.startsWith("rw")) {
          continue;
        }
        long end = head.end;
        if (i + 1 < mappings.size()) {
          Mapping rest = mappings.get(i + 1);
          if (rest.start == end && rest.name.isEmpty() && rest.perms.startsWith("---")) {
            end = rest.end;
          }
        }
        if (end - head.start == ARENA) {
          arenas++;
          arenaRss += head.rss;
        }
      }
      return new Maps(rss, anon, arenas, arenaRss, brk, byInfo);
    }

    private static List<Mapping> smaps() throws IOException {
      List<Mapping> mappings = new ArrayList<>();
      Mapping current = null;
      for (String line : Files.readAllLines(Path.of("/proc/self/smaps"))) {
        int dash = line.indexOf('-');
        int space = line.indexOf(' ');
        if (dash > 0 && space > dash && line.substring(0, dash).matches("[0-9a-f]+")) {
          String[] parts = line.split("\\s+", 6);
          long start = Long.parseUnsignedLong(parts[0].substring(0, dash), 16);
          long end = Long.parseUnsignedLong(parts[0].substring(dash + 1), 16);
          String name = parts.length > 5 ? parts[5].strip() : "";
          current = new Mapping(start, end, parts[1], name, "-");
          mappings.add(current);
        } else if (current != null && line.startsWith("Rss:")) {
          current.rss = kib(line);
        } else if (current != null && line.startsWith("Anonymous:")) {
          current.anon = kib(line);
        }
      }
      return mappings;
    }

    /**
     * {@code System.map}'s rows: range, vsize, prot, rss (bytes), hugetlb, pgsz, notes, info, file.
     */
    private static List<Mapping> systemMap() {
      List<Mapping> mappings = new ArrayList<>();
      String text = diagnostic("systemMap", new String[0]);
      for (String line : text.split("\n")) {
        Matcher row = SYSTEM_MAP_ROW.matcher(line);
        if (!row.find()) {
          continue;
        }
        String file = row.group(7);
        Mapping m =
            new Mapping(
                Long.parseUnsignedLong(row.group(1), 16),
                Long.parseUnsignedLong(row.group(2), 16),
                row.group(3),
                file.equals("-") ? "" : file,
                row.group(6));
        m.rss = Long.parseLong(row.group(4)) / 1024;
        // Private anonymous memory: no file behind it (the brk heap and stacks included).
        m.anon = m.name.isEmpty() || m.name.startsWith("[") ? m.rss : 0;
        mappings.add(m);
      }
      return mappings;
    }

    private static long kib(String line) {
      return Long.parseLong(line.replaceAll("[^0-9]", ""));
    }
  }

  private static final class Mapping {
    final long start;
    final long end;
    final String perms;
    final String name;
    final String info;
    long rss;
    long anon;

    Mapping(long start, long end, String perms, String name, String info) {
      this.start = start;
      this.end = end;
      this.perms = perms;
      this.name = name;
      this.info = info;
    }
  }
}
