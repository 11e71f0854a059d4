package dev.agentsandbox.policy.event;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Reads the fields of one event's data, a plain tree, collecting every problem with its path;
 * {@link #done()} throws them all. Absent and JSON {@code null} read the same. Not thread-safe.
 */
final class Fields {
  private final String what;
  private final String path;
  private final Map<?, ?> map;
  private final List<String> problems;

  private Fields(String what, String path, Map<?, ?> map, List<String> problems) {
    this.what = what;
    this.path = path;
    this.map = map;
    this.problems = problems;
  }

  /** The fields of {@code tree}, which must be an object, read as {@code what}. */
  static Fields of(String what, Object tree) {
    List<String> problems = new ArrayList<>();
    if (!(tree instanceof Map<?, ?> map)) {
      problems.add("the data is not an object");
      return new Fields(what, "", Map.of(), problems);
    }
    return new Fields(what, "", map, problems);
  }

  /** The value at {@code key} of {@code tree}, without reading it as anything; "" when none. */
  static Object peek(Object tree, String key) {
    Object value = tree instanceof Map<?, ?> map ? map.get(key) : null;
    return value == null ? "" : value;
  }

  static Fields of(EventType type, Object tree) {
    return of(type.wireName() + " row", tree);
  }

  /** Throws every problem found, if any. */
  void done() {
    if (!problems.isEmpty()) {
      throw new InvalidEventException(what, problems);
    }
  }

  boolean has(String key) {
    return map.get(key) != null;
  }

  private String at(String key) {
    return path.isEmpty() ? key : path + "." + key;
  }

  void problem(String key, String text) {
    problems.add(at(key) + " " + text);
  }

  String string(String key) {
    Object value = map.get(key);
    if (value instanceof String text) {
      return text;
    }
    problem(key, value == null ? "is missing" : "is not a string");
    return "";
  }

  Optional<String> optionalString(String key) {
    return has(key) ? Optional.of(string(key)) : Optional.empty();
  }

  /** A string field, or {@code fallback} when an older writer left it out. */
  String string(String key, String fallback) {
    return has(key) ? string(key) : fallback;
  }

  boolean bool(String key) {
    Object value = map.get(key);
    if (value instanceof Boolean flag) {
      return flag;
    }
    problem(key, value == null ? "is missing" : "is not true or false");
    return false;
  }

  /** A boolean field, or {@code fallback} when an older writer left it out. */
  boolean bool(String key, boolean fallback) {
    return has(key) ? bool(key) : fallback;
  }

  long whole(String key) {
    Object value = map.get(key);
    if (value == null) {
      problem(key, "is missing");
      return 0;
    }
    Optional<Long> number = wholeNumber(value);
    if (number.isEmpty()) {
      problem(key, "is not a whole number");
      return 0;
    }
    return number.get();
  }

  Optional<Long> optionalWhole(String key) {
    return has(key) ? Optional.of(whole(key)) : Optional.empty();
  }

  int integer(String key) {
    long value = whole(key);
    if (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE) {
      problem(key, "is out of range");
      return 0;
    }
    return (int) value;
  }

  Optional<Integer> optionalInteger(String key) {
    return has(key) ? Optional.of(integer(key)) : Optional.empty();
  }

  double number(String key) {
    Object value = map.get(key);
    if (value instanceof Number number) {
      return number.doubleValue();
    }
    problem(key, value == null ? "is missing" : "is not a number");
    return 0;
  }

  Instant instant(String key) {
    String text = string(key);
    if (text.isEmpty()) {
      return Instant.EPOCH;
    }
    try {
      return Instant.parse(text);
    } catch (DateTimeParseException e) {
      problem(key, "is not an RFC 3339 UTC time");
      return Instant.EPOCH;
    }
  }

  Optional<Instant> optionalInstant(String key) {
    return has(key) ? Optional.of(instant(key)) : Optional.empty();
  }

  /** A closed set's value by its wire name. */
  <T> T named(String key, Function<String, Optional<T>> lookup, T fallback) {
    String text = string(key);
    Optional<T> value = lookup.apply(text);
    if (value.isEmpty()) {
      if (!text.isEmpty()) {
        problem(key, "names no known value: " + text);
      }
      return fallback;
    }
    return value.get();
  }

  List<String> strings(String key) {
    Object value = map.get(key);
    if (!(value instanceof List<?> list)) {
      problem(key, value == null ? "is missing" : "is not a list");
      return List.of();
    }
    List<String> out = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      if (list.get(i) instanceof String text) {
        out.add(text);
      } else {
        problems.add(at(key) + "[" + i + "] is not a string");
      }
    }
    return List.copyOf(out);
  }

  /** A list of strings, or empty when an older writer left it out (or wrote null). */
  List<String> stringsOrEmpty(String key) {
    return has(key) ? strings(key) : List.of();
  }

  /** A list of whole numbers that fit an int, or empty when an older writer left it out. */
  List<Integer> integersOrEmpty(String key) {
    Object value = map.get(key);
    if (value == null) {
      return List.of();
    }
    if (!(value instanceof List<?> list)) {
      problem(key, "is not a list");
      return List.of();
    }
    List<Integer> out = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      Optional<Long> number = wholeNumber(list.get(i));
      if (number.isPresent()
          && number.get() >= Integer.MIN_VALUE
          && number.get() <= Integer.MAX_VALUE) {
        out.add(number.get().intValue());
      } else {
        problems.add(at(key) + "[" + i + "] is not a whole number");
      }
    }
    return List.copyOf(out);
  }

  /** Each object of a list field, read by {@code read}. */
  <T> List<T> objects(String key, Function<Fields, T> read) {
    Object value = map.get(key);
    if (!(value instanceof List<?> list)) {
      problem(key, value == null ? "is missing" : "is not a list");
      return List.of();
    }
    List<T> out = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      String itemPath = at(key) + "[" + i + "]";
      if (list.get(i) instanceof Map<?, ?> item) {
        out.add(read.apply(new Fields(what, itemPath, item, problems)));
      } else {
        problems.add(itemPath + " is not an object");
      }
    }
    return List.copyOf(out);
  }

  <T> T object(String key, Function<Fields, T> read) {
    Object value = map.get(key);
    Map<?, ?> item = value instanceof Map<?, ?> m ? m : Map.of();
    if (!(value instanceof Map<?, ?>)) {
      problem(key, value == null ? "is missing" : "is not an object");
    }
    return read.apply(new Fields(what, at(key), item, problems));
  }

  /** An object of whole-number counts by name, sorted by name. */
  Map<String, Long> counts(String key) {
    Object value = map.get(key);
    if (!(value instanceof Map<?, ?> counts)) {
      problem(key, value == null ? "is missing" : "is not an object");
      return Map.of();
    }
    Map<String, Long> out = new TreeMap<>();
    counts.forEach(
        (name, count) -> {
          Optional<Long> number = wholeNumber(count);
          if (number.isEmpty()) {
            problems.add(at(key) + "." + name + " is not a whole number");
          } else {
            out.put(String.valueOf(name), number.get());
          }
        });
    return java.util.Collections.unmodifiableMap(out);
  }

  private static Optional<Long> wholeNumber(Object value) {
    if (value instanceof Integer || value instanceof Long || value instanceof Short) {
      return Optional.of(((Number) value).longValue());
    }
    try {
      if (value instanceof BigInteger big) {
        return Optional.of(big.longValueExact());
      }
      if (value instanceof BigDecimal decimal) {
        return Optional.of(decimal.longValueExact());
      }
    } catch (ArithmeticException e) {
      return Optional.empty();
    }
    if (value instanceof Double || value instanceof Float) {
      double d = ((Number) value).doubleValue();
      if (d == Math.rint(d) && Math.abs(d) < 9.0e15) {
        return Optional.of((long) d);
      }
    }
    return Optional.empty();
  }

  /** A tree in the order fields are put, for {@link RunEvent#toTree()}. */
  static final class Tree {
    private final Map<String, Object> map = new LinkedHashMap<>();

    Tree put(String key, Object value) {
      map.put(key, value);
      return this;
    }

    Tree putIf(boolean condition, String key, Object value) {
      if (condition) {
        map.put(key, value);
      }
      return this;
    }

    Tree putIfPresent(String key, Optional<?> value) {
      value.ifPresent(v -> map.put(key, v instanceof Instant at ? at.toString() : v));
      return this;
    }

    Map<String, Object> build() {
      return java.util.Collections.unmodifiableMap(map);
    }
  }

  static Tree tree() {
    return new Tree();
  }
}
