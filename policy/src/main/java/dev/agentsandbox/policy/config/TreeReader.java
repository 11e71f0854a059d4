package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowEntry;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.InvalidHostException;
import dev.agentsandbox.policy.text.Bounded;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads plain Java values parsed from JSON, collecting every problem with its JSON path instead of
 * stopping at the first. Not thread-safe: one instance per document.
 */
final class TreeReader {
  /** Agent and scope names: a DNS label, so they fit namespaces, labels and file names alike. */
  static final Pattern NAME = Pattern.compile("[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?");

  private static final Pattern PLAIN_KEY = Pattern.compile("[A-Za-z0-9_-]{1,64}");
  private static final int ECHO_LIMIT = 64;

  private final List<ConfigProblem> problems = new ArrayList<>();

  void problem(String path, String message) {
    problems.add(new ConfigProblem(path, message));
  }

  InvalidConfigException failure() {
    return new InvalidConfigException(problems);
  }

  void throwIfAny() {
    if (!problems.isEmpty()) {
      throw new InvalidConfigException(problems);
    }
  }

  static String field(String parent, String key) {
    String part =
        PLAIN_KEY.matcher(key).matches() ? key : "[\"" + echo(key).replace("\"", "\\\"") + "\"]";
    if (parent.isEmpty()) {
      return part;
    }
    return part.startsWith("[") ? parent + part : parent + "." + part;
  }

  static String index(String parent, int i) {
    return parent + "[" + i + "]";
  }

  static String echo(String s) {
    return Bounded.text(s, ECHO_LIMIT, Bounded.Escape.NONE);
  }

  /** The value as an object, or null (with a problem) when it is something else. */
  @SuppressWarnings("unchecked")
  Map<String, Object> object(String path, Object value) {
    if (value instanceof Map<?, ?> map) {
      return (Map<String, Object>) map;
    }
    problem(path, "must be an object, not " + kind(value));
    return null;
  }

  /** Records a problem for every key not in {@code known}; {@code readOnly} keys get a hint. */
  void onlyKeys(String path, Map<String, Object> object, Set<String> known, Set<String> readOnly) {
    for (String key : object.keySet()) {
      if (readOnly.contains(key)) {
        problem(field(path, key), "is computed by the server and cannot be set");
      } else if (!known.contains(key)) {
        problem(field(path, key), "unknown field (known: " + String.join(", ", known) + ")");
      }
    }
  }

  boolean bool(String path, Object value, boolean absent) {
    if (value == null) {
      return absent;
    }
    if (value instanceof Boolean b) {
      return b;
    }
    problem(path, "must be true or false, not " + kind(value));
    return absent;
  }

  String string(String path, Object value) {
    if (value instanceof String s) {
      return s;
    }
    problem(path, "must be a string, not " + kind(value));
    return null;
  }

  /** A whole number within bounds, or {@code absent} when missing or wrong. */
  int wholeNumber(String path, Object value, int absent, int min, int max) {
    if (value == null) {
      return absent;
    }
    BigDecimal number = decimal(path, value);
    if (number == null) {
      return absent;
    }
    if (number.stripTrailingZeros().scale() > 0) {
      problem(path, "must be a whole number, not " + shown(number));
      return absent;
    }
    if (!within(path, number, min, max)) {
      return absent;
    }
    return number.intValueExact();
  }

  double fraction(String path, Object value, double absent, double min, double max) {
    if (value == null) {
      return absent;
    }
    BigDecimal number = decimal(path, value);
    if (number == null) {
      return absent;
    }
    if (!within(path, number, min, max)) {
      return absent;
    }
    return number.doubleValue();
  }

  /**
   * Whether {@code number} is from {@code min} to {@code max}; records the problem if not. The
   * bounds are shown as Java writes them ({@code 16}, {@code 8.0}).
   */
  private boolean within(String path, BigDecimal number, Number min, Number max) {
    if (number.compareTo(BigDecimal.valueOf(min.doubleValue())) >= 0
        && number.compareTo(BigDecimal.valueOf(max.doubleValue())) <= 0) {
      return true;
    }
    problem(path, "must be from " + min + " to " + max + ", not " + shown(number));
    return false;
  }

  /**
   * A number as a message shows it: plain where that is short, else in scientific notation, then
   * cut to the echo's length. Never {@code toPlainString} of {@code 1e999999999}: that is a string
   * of a billion digits, built from eleven bytes of request.
   */
  private static String shown(BigDecimal number) {
    long exponent = (long) number.precision() - number.scale() - 1;
    boolean plainIsShort = Math.abs(exponent) <= 40 && number.precision() <= 40;
    return echo(plainIsShort ? number.toPlainString() : number.toString());
  }

  private BigDecimal decimal(String path, Object value) {
    return switch (value) {
      case Integer i -> BigDecimal.valueOf(i);
      case Long l -> BigDecimal.valueOf(l);
      case BigInteger b -> new BigDecimal(b);
      case BigDecimal d -> d;
      case Double d when Double.isFinite(d) -> BigDecimal.valueOf(d);
      case Float f when Float.isFinite(f) -> BigDecimal.valueOf(f);
      default -> {
        problem(path, "must be a number, not " + kind(value));
        yield null;
      }
    };
  }

  /** A name (agent or scope): a DNS label of lower-case letters, digits and inner hyphens. */
  boolean checkName(String path, String name) {
    if (NAME.matcher(name).matches()) {
      return true;
    }
    problem(
        path,
        "'"
            + echo(name)
            + "' is not a valid name (1 to 63 lower-case letters, digits and inner hyphens)");
    return false;
  }

  /** An allow-list: each entry checked, every bad entry reported at its index. */
  AllowList allowList(String path, Object value) {
    if (!(value instanceof List<?> raw)) {
      problem(path, "must be a list of host names, not " + kind(value));
      return AllowList.EMPTY;
    }
    List<AllowEntry> entries = new ArrayList<>();
    for (int i = 0; i < raw.size(); i++) {
      Object item = raw.get(i);
      String entryPath = index(path, i);
      if (!(item instanceof String text)) {
        problem(entryPath, "must be a string, not " + kind(item));
        continue;
      }
      try {
        entries.add(AllowEntry.parse(text));
      } catch (InvalidHostException e) {
        problem(entryPath, e.getMessage());
      }
    }
    return new AllowList(entries);
  }

  static String kind(Object value) {
    return switch (value) {
      case null -> "null";
      case Map<?, ?> m -> "an object";
      case List<?> l -> "a list";
      case String s -> "a string";
      case Boolean b -> "a boolean";
      case Number n -> "a number";
      default -> "a " + value.getClass().getSimpleName();
    };
  }
}
