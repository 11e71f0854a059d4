package dev.agentsandbox.server.evidence;

import dev.agentsandbox.server.audit.AuditEndpoints;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Echo;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * The stretch of the audit log a proposal or an impact reads: from {@code since} to {@code until}
 * (the time of the request), at most {@link #MAX_LOOKBACK} back, so that no answer walks the whole
 * log.
 *
 * @param since the oldest row read
 * @param until when the answer was computed
 */
public record EvidenceWindow(Instant since, Instant until) {
  /** How far back proposals and impacts read: the look-back limit. */
  public static final Duration MAX_LOOKBACK = Duration.ofDays(90);

  /** The window when none is asked for. */
  public static final Duration DEFAULT = Duration.ofDays(7);

  public EvidenceWindow {
    Objects.requireNonNull(since, "since");
    Objects.requireNonNull(until, "until");
  }

  /** The last {@link #DEFAULT} before {@code now}. */
  public static EvidenceWindow lastWeek(Instant now) {
    return new EvidenceWindow(now.minus(DEFAULT), now);
  }

  /**
   * Reads a query parameter: an age ({@code 7d}, {@code 12h}) or an instant, the default when
   * absent.
   *
   * @throws ApiException 400 when it is malformed, in the future or past the look-back limit
   */
  public static EvidenceWindow parse(String parameter, String raw, Instant now) {
    if (raw == null || raw.isBlank()) {
      return lastWeek(now);
    }
    Instant since;
    try {
      since = AuditEndpoints.since(raw, now);
    } catch (ApiException malformed) {
      throw ApiException.badRequest(
          parameter
              + ": '"
              + Echo.bounded(raw)
              + "' is neither an age (7d, 12h, 30m) nor an instant (2026-01-31T12:00:00Z)");
    } catch (ArithmeticException | java.time.DateTimeException huge) {
      throw pastLimit(parameter, raw);
    }
    if (since.isAfter(now)) {
      throw ApiException.badRequest(
          parameter + ": '" + Echo.bounded(raw) + "' is in the future (give an age such as 7d)");
    }
    if (since.isBefore(now.minus(MAX_LOOKBACK))) {
      throw pastLimit(parameter, raw);
    }
    return new EvidenceWindow(since, now);
  }

  private static ApiException pastLimit(String parameter, String raw) {
    return ApiException.badRequest(
        parameter
            + ": '"
            + Echo.bounded(raw)
            + "' reaches back past the "
            + MAX_LOOKBACK.toDays()
            + " days proposals and impacts read (ask for "
            + MAX_LOOKBACK.toDays()
            + "d or less)");
  }
}
