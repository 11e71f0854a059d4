package dev.agentsandbox.bench;

import java.util.Arrays;

/**
 * Nearest-rank summary of one series of latency samples, in nanoseconds.
 *
 * <p>Nearest rank (the smallest sample with at least p % of the samples at or below it) is used
 * rather than interpolation so that every reported value is a latency that was really observed.
 *
 * @param count number of samples
 * @param p50Nanos median
 * @param p99Nanos 99th percentile
 * @param maxNanos largest sample
 */
public record LatencySummary(int count, long p50Nanos, long p99Nanos, long maxNanos) {

  public LatencySummary {
    if (count < 1) {
      throw new IllegalArgumentException("a latency summary needs at least one sample");
    }
    if (p50Nanos < 0 || p50Nanos > p99Nanos || p99Nanos > maxNanos) {
      throw new IllegalArgumentException(
          "percentiles out of order: p50=" + p50Nanos + " p99=" + p99Nanos + " max=" + maxNanos);
    }
  }

  /** Summarizes the samples; the array is copied, not reordered. */
  public static LatencySummary of(long[] samples) {
    if (samples.length == 0) {
      throw new IllegalArgumentException("a latency summary needs at least one sample");
    }
    long[] sorted = samples.clone();
    Arrays.sort(sorted);
    return new LatencySummary(
        sorted.length,
        nearestRank(sorted, 50.0),
        nearestRank(sorted, 99.0),
        sorted[sorted.length - 1]);
  }

  /**
   * The nearest-rank percentile of an ascending array: the element at rank ceil(p/100 * n),
   * counting from 1.
   */
  static long nearestRank(long[] sorted, double percent) {
    if (sorted.length == 0) {
      throw new IllegalArgumentException("no samples");
    }
    if (!(percent > 0.0 && percent <= 100.0)) {
      throw new IllegalArgumentException("percentile must be in (0, 100]: " + percent);
    }
    int rank = (int) Math.ceil(percent / 100.0 * sorted.length);
    return sorted[Math.max(rank, 1) - 1];
  }

  /** The median of the values, the lower middle one for an even count. */
  static double median(double[] values) {
    if (values.length == 0) {
      throw new IllegalArgumentException("no values");
    }
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[(sorted.length - 1) / 2];
  }
}
