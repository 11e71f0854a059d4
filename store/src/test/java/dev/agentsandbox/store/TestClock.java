package dev.agentsandbox.store;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/** A clock the test moves by hand; thread-safe. */
final class TestClock extends Clock {

  private final AtomicLong millis;

  TestClock(Instant start) {
    millis = new AtomicLong(start.toEpochMilli());
  }

  void advance(Duration duration) {
    millis.addAndGet(duration.toMillis());
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    throw new UnsupportedOperationException("the test clock is always UTC");
  }

  @Override
  public long millis() {
    return millis.get();
  }

  @Override
  public Instant instant() {
    return Instant.ofEpochMilli(millis());
  }
}
