package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.Completion;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.IntSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** How what the wait saw is judged into a run's completion, case by case and in which order. */
class VmEndTest {
  private static final Duration BOOT = Duration.ofSeconds(90);
  private static final Instant UNTIL = Instant.parse("2026-12-02T05:00:00Z");
  private static final Path CONSOLE = Path.of("/run/asb/r1/vmm/console.log");
  private static final OptionalInt NONE = OptionalInt.empty();

  static Stream<Arguments> cases() {
    return Stream.of(
        Arguments.of(
            "a declared failure comes before everything",
            new VmEnd(
                OptionalInt.of(0),
                Optional.of("the step runner broke the protocol"),
                true,
                true,
                true,
                Optional.of("guest error"),
                Optional.empty()),
            Completion.End.ERROR,
            "the step runner broke the protocol"),
        Arguments.of(
            "a kill before a boot time-out or the deadline",
            new VmEnd(NONE, Optional.empty(), true, true, true, Optional.empty(), Optional.empty()),
            Completion.End.KILLED,
            "killed on request"),
        Arguments.of(
            "a guest that never started the command",
            new VmEnd(
                NONE, Optional.empty(), false, true, true, Optional.of("x"), Optional.empty()),
            Completion.End.ERROR,
            "the guest did not start the command within 90 s"),
        Arguments.of(
            "the deadline before a guest's error",
            new VmEnd(
                OptionalInt.of(137),
                Optional.empty(),
                false,
                false,
                true,
                Optional.of("x"),
                Optional.empty()),
            Completion.End.DEADLINE,
            "workload stopped at the deadline 2026-12-02T05:00:00Z"),
        Arguments.of(
            "the guest's own error before the exit it reported",
            new VmEnd(
                OptionalInt.of(0),
                Optional.empty(),
                false,
                false,
                false,
                Optional.of("no /workspace"),
                Optional.empty()),
            Completion.End.ERROR,
            "the guest failed: no /workspace"),
        Arguments.of(
            "a VM that stopped before its command ended names its exit and console",
            new VmEnd(
                NONE, Optional.empty(), false, false, false, Optional.empty(), Optional.empty()),
            Completion.End.ERROR,
            "the VM stopped before its command ended (exit status 3, console in " + CONSOLE + ")"),
        Arguments.of(
            "an exit, with what the guest said of the outputs",
            new VmEnd(
                OptionalInt.of(2),
                Optional.empty(),
                false,
                false,
                false,
                Optional.empty(),
                Optional.of("outputs cut at the disk's size")),
            Completion.End.EXIT,
            "exited with status 2; outputs cut at the disk's size"),
        Arguments.of(
            "137 is named as the OOM killer's",
            new VmEnd(
                OptionalInt.of(137),
                Optional.empty(),
                false,
                false,
                false,
                Optional.empty(),
                Optional.empty()),
            Completion.End.EXIT,
            "exited with status 137 (killed: out of memory?)"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void judgesWhatTheWaitSaw(String name, VmEnd end, Completion.End expected, String detail) {
    Completion completion = end.completion(BOOT, UNTIL, () -> 3, CONSOLE);

    assertThat(completion.end()).isEqualTo(expected);
    assertThat(completion.detail()).isEqualTo(detail);
    assertThat(completion.exitStatus()).isEqualTo(end.exit());
  }

  @Test
  void theVmmsExitIsAskedForOnlyWhenItIsNamed() {
    IntSupplier unasked =
        () -> {
          throw new IllegalThreadStateException("the VMM is still running");
        };
    VmEnd exited =
        new VmEnd(
            OptionalInt.of(0),
            Optional.empty(),
            false,
            false,
            false,
            Optional.empty(),
            Optional.empty());

    assertThat(exited.completion(BOOT, UNTIL, unasked, CONSOLE).detail())
        .isEqualTo("exited with status 0");
  }
}
