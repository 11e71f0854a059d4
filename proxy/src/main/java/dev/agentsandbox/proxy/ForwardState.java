package dev.agentsandbox.proxy;

import java.util.EnumSet;
import java.util.Set;

/**
 * Where one forwarded plain-HTTP exchange stands. The request and the response may overlap (an
 * upstream may answer before the request body is complete), so the states name both sides.
 *
 * <pre>
 * DECIDING ──────────────┬──────────────────────────────────────────────▶ DONE (refused)
 *   │ allowed            │
 *   ▼                    │  (dial refused, client gone, bad body: any state ▶ DONE)
 * CONNECTING ── request read ──▶ CONNECTING_REQUEST_READ
 *   │ connected                     │ connected
 *   ▼                               ▼
 * SENDING ───── request sent ───▶ AWAITING_RESPONSE
 *   │ response head                 │ response head
 *   ▼                               ▼
 * SENDING_AND_RECEIVING ─ sent ─▶ RECEIVING
 *   │ response end                  │ response end
 *   ▼                               ▼
 * FINISHING (closes after) ◀────────┘ (next request, or close)
 *   │ last byte written
 *   ▼
 * DONE
 * </pre>
 */
enum ForwardState {
  /** The request head is being decided. */
  DECIDING,
  /** Allowed: resolving and dialling. Body parts that arrive (from the same read) are held. */
  CONNECTING,
  /** Still dialling; the whole request has arrived and is held. */
  CONNECTING_REQUEST_READ,
  /** Connected: the request body streams up; no final response head yet. */
  SENDING,
  /** The request is complete upstream; waiting for the final response head (1xx pass through). */
  AWAITING_RESPONSE,
  /** The upstream answered before the request was complete: both directions stream. */
  SENDING_AND_RECEIVING,
  /** The request is complete; the response body streams down. */
  RECEIVING,
  /** The last response bytes are being written; then the next request, or the close. */
  FINISHING,
  /** Ended: answered, refused or failed. The upstream, the timer and held parts are released. */
  DONE;

  /** The states this one may move to: the whole transition table. */
  Set<ForwardState> successors() {
    return switch (this) {
      case DECIDING -> EnumSet.of(CONNECTING, DONE);
      case CONNECTING -> EnumSet.of(CONNECTING_REQUEST_READ, SENDING, DONE);
      case CONNECTING_REQUEST_READ -> EnumSet.of(AWAITING_RESPONSE, DONE);
      case SENDING -> EnumSet.of(AWAITING_RESPONSE, SENDING_AND_RECEIVING, DONE);
      case AWAITING_RESPONSE -> EnumSet.of(RECEIVING, DONE);
      case SENDING_AND_RECEIVING -> EnumSet.of(RECEIVING, FINISHING, DONE);
      case RECEIVING -> EnumSet.of(FINISHING, DONE);
      case FINISHING -> EnumSet.of(DONE);
      case DONE -> EnumSet.noneOf(ForwardState.class);
    };
  }

  /** Whether the client's body parts belong to this exchange (held, or streamed up). */
  boolean takesRequestBody() {
    return this == CONNECTING || this == SENDING || this == SENDING_AND_RECEIVING;
  }

  /** Whether the client is read now: only while its body streams to a connected upstream. */
  boolean readsClient() {
    return this == SENDING || this == SENDING_AND_RECEIVING;
  }

  /** Whether the upstream's messages are relayed now. */
  boolean readsResponse() {
    return this == SENDING
        || this == AWAITING_RESPONSE
        || this == SENDING_AND_RECEIVING
        || this == RECEIVING;
  }

  /** Whether the final response head went to the client. */
  boolean responseStarted() {
    return this == SENDING_AND_RECEIVING || this == RECEIVING || this == FINISHING;
  }

  /** Whether the exchange no longer fails on a close (its end is decided). */
  boolean finished() {
    return this == FINISHING || this == DONE;
  }
}
