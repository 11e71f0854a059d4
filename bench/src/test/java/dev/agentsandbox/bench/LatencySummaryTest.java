package dev.agentsandbox.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class LatencySummaryTest {

  static Stream<Arguments> nearestRankCases() {
    long[] oneToHundred = LongStream.rangeClosed(1, 100).toArray();
    long[] oneToThousand = LongStream.rangeClosed(1, 1000).toArray();
    return Stream.of(
        Arguments.of("a single sample is every percentile", new long[] {7}, 50.0, 7L),
        Arguments.of("p99 of one sample is that sample", new long[] {7}, 99.0, 7L),
        Arguments.of("median of 1..100 is the 50th value", oneToHundred, 50.0, 50L),
        Arguments.of("p99 of 1..100 is the 99th value, not the max", oneToHundred, 99.0, 99L),
        Arguments.of("p100 is the maximum", oneToHundred, 100.0, 100L),
        Arguments.of("p99 of 1..1000 is the 990th value", oneToThousand, 99.0, 990L),
        Arguments.of(
            "median of an even count is the lower middle", new long[] {1, 2, 3, 4}, 50.0, 2L),
        Arguments.of("a rank between samples rounds up", new long[] {10, 20, 30}, 50.0, 20L),
        Arguments.of("p99 of three samples is the largest", new long[] {10, 20, 30}, 99.0, 30L),
        Arguments.of("a tiny percentile is the first sample", oneToHundred, 0.001, 1L));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("nearestRankCases")
  void nearestRank(String name, long[] sorted, double percent, long expected) {
    assertThat(LatencySummary.nearestRank(sorted, percent)).isEqualTo(expected);
  }

  @Test
  void summarizesUnsortedSamplesWithoutReorderingThem() {
    long[] samples = LongStream.rangeClosed(1, 200).map(i -> (i * 37) % 200 + 1).toArray();
    long[] copy = samples.clone();

    LatencySummary summary = LatencySummary.of(samples);

    assertThat(summary).isEqualTo(new LatencySummary(200, 100, 198, 200));
    assertThat(samples).containsExactly(copy);
  }

  @Test
  void oneSlowOutlierMovesTheMaxButNotTheMedian() {
    long[] samples = LongStream.generate(() -> 100).limit(999).toArray();
    long[] withOutlier =
        LongStream.concat(LongStream.of(samples), LongStream.of(1_000_000)).toArray();

    LatencySummary summary = LatencySummary.of(withOutlier);

    assertThat(summary.p50Nanos()).isEqualTo(100);
    assertThat(summary.p99Nanos()).isEqualTo(100);
    assertThat(summary.maxNanos()).isEqualTo(1_000_000);
  }

  @Test
  void refusesAnEmptySeries() {
    assertThatThrownBy(() -> LatencySummary.of(new long[0]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one sample");
  }

  @Test
  void refusesPercentilesOutsideTheOpenClosedRange() {
    assertThatThrownBy(() -> LatencySummary.nearestRank(new long[] {1}, 0.0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> LatencySummary.nearestRank(new long[] {1}, 100.5))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void refusesPercentilesOutOfOrder() {
    assertThatThrownBy(() -> new LatencySummary(3, 50, 40, 60))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("out of order");
  }

  @Test
  void medianOfRepeatedRunsIsTheMiddleRun() {
    assertThat(LatencySummary.median(new double[] {900.0, 100.0, 500.0})).isEqualTo(500.0);
    assertThat(LatencySummary.median(new double[] {4.0, 1.0, 3.0, 2.0})).isEqualTo(2.0);
  }
}
