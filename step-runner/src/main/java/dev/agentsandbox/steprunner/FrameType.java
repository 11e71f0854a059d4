package dev.agentsandbox.steprunner;

import java.util.Optional;

/**
 * Every frame type of the step runner's protocol (docs/step-runner.md), with its code on the wire.
 * Codes below {@code 0x40} go from the host to the runner, the others back; any other code is a
 * protocol violation.
 */
enum FrameType {
  EXEC(0x01),
  STDIN(0x02),
  STDIN_END(0x03),
  KILL(0x04),
  STAT(0x10),
  LIST(0x11),
  READ(0x12),
  WALK(0x13),
  MKDIR(0x14),
  PUT(0x15),
  PUT_DATA(0x16),
  PUT_END(0x17),
  CREDIT(0x18),
  CANCEL(0x19),
  BYE(0x3f),
  HELLO(0x40),
  STARTED(0x41),
  STDOUT(0x42),
  STDERR(0x43),
  EXITED(0x44),
  END(0x50),
  REFUSED(0x51),
  INFO(0x52),
  DATA(0x53),
  SIZE(0x54),
  SKIPPED(0x55),
  FATAL(0x7f);

  private static final FrameType[] BY_CODE = new FrameType[256];

  static {
    for (FrameType type : values()) {
      BY_CODE[type.code] = type;
    }
  }

  final int code;

  FrameType(int code) {
    this.code = code;
  }

  /** Whether the runner sends frames of this type (the host only reads these). */
  boolean fromRunner() {
    return code >= 0x40;
  }

  /** The runner's frame type with this code; empty for an unknown code or one the host sends. */
  static Optional<FrameType> fromRunner(int code) {
    FrameType type = code >= 0 && code < 256 ? BY_CODE[code] : null;
    return type != null && type.fromRunner() ? Optional.of(type) : Optional.empty();
  }
}
