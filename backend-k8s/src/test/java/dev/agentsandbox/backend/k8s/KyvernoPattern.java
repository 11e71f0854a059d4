package dev.agentsandbox.backend.k8s;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The part of Kyverno's validate-pattern language the sandbox policies use: plain keys (must be
 * present and match), {@code =(key)} (if present, must match), {@code X(key)} (must be absent),
 * lists (every element must match the pattern's element), and scalars with {@code |} alternatives,
 * {@code *}/{@code ?} wildcards and {@code >N} comparisons. It cannot stand in for Kyverno's
 * admission: it checks that the patterns say what they should, and {@code kyverno apply} on the
 * cluster checks the rest.
 */
final class KyvernoPattern {
  private KyvernoPattern() {}

  /** Where {@code resource} breaks {@code pattern}; empty when it matches. */
  static List<String> violations(Object pattern, Object resource) {
    List<String> out = new ArrayList<>();
    check(pattern, resource, "", out);
    return out;
  }

  @SuppressWarnings("unchecked")
  private static void check(Object pattern, Object resource, String path, List<String> out) {
    if (pattern instanceof Map<?, ?> map) {
      if (!(resource instanceof Map<?, ?> actual)) {
        out.add(path + ": expected an object");
        return;
      }
      for (var entry : ((Map<String, Object>) map).entrySet()) {
        String key = entry.getKey();
        if (key.startsWith("=(") && key.endsWith(")")) {
          String name = key.substring(2, key.length() - 1);
          if (actual.get(name) != null) {
            check(entry.getValue(), actual.get(name), path + "/" + name, out);
          }
        } else if (key.startsWith("X(") && key.endsWith(")")) {
          String name = key.substring(2, key.length() - 1);
          if (actual.get(name) != null) {
            out.add(path + "/" + name + ": must be absent");
          }
        } else if (actual.get(key) == null) {
          out.add(path + "/" + key + ": missing");
        } else {
          check(entry.getValue(), actual.get(key), path + "/" + key, out);
        }
      }
      return;
    }
    if (pattern instanceof List<?> list) {
      if (!(resource instanceof List<?> actual)) {
        out.add(path + ": expected a list");
        return;
      }
      if (list.size() == 1 && list.get(0) instanceof Map<?, ?>) {
        for (int i = 0; i < actual.size(); i++) {
          check(list.get(0), actual.get(i), path + "/" + i, out);
        }
      } else if (!actual.stream()
          .map(String::valueOf)
          .toList()
          .equals(list.stream().map(String::valueOf).toList())) {
        out.add(path + ": " + actual + " is not " + list);
      }
      return;
    }
    if (!scalarMatches(String.valueOf(pattern), resource)) {
      out.add(path + ": " + resource + " does not match " + pattern);
    }
  }

  private static boolean scalarMatches(String pattern, Object resource) {
    if (resource instanceof Map<?, ?> || resource instanceof List<?>) {
      return false;
    }
    String value = String.valueOf(resource);
    for (String alternative : pattern.split("\\|")) {
      String alt = alternative.strip();
      if (alt.startsWith(">") && isNumber(value)) {
        if (new BigDecimal(value).compareTo(new BigDecimal(alt.substring(1))) > 0) {
          return true;
        }
      } else if (wildcard(alt).matcher(value).matches()) {
        return true;
      }
    }
    return false;
  }

  private static boolean isNumber(String value) {
    return value.matches("-?[0-9]+(\\.[0-9]+)?");
  }

  private static Pattern wildcard(String glob) {
    StringBuilder regex = new StringBuilder();
    for (int i = 0; i < glob.length(); i++) {
      char c = glob.charAt(i);
      switch (c) {
        case '*' -> regex.append(".*");
        case '?' -> regex.append('.');
        default -> regex.append(Pattern.quote(String.valueOf(c)));
      }
    }
    return Pattern.compile(regex.toString());
  }
}
