package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.Completion;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.IntSupplier;

/**
 * What {@link MicroVmSandbox#await} saw by the time the run's VM stopped, and the one place that
 * judges it into the run's {@link Completion}: a failure the backend declared first, then a kill, a
 * guest that never started the command, the deadline, an error the guest reported, a VM that
 * stopped before the command ended, and last the command's own exit.
 *
 * @param exit the command's exit status as the guest reported it, if it did
 * @param failure why the backend ended the sandbox as failed ({@link MicroVmSandbox#failed})
 * @param killed whether a kill was asked for
 * @param bootTimedOut whether the guest did not start the command within the boot time-out
 * @param stopped whether the workload was stopped at the deadline
 * @param guestError what the guest's init reported as its own failure
 * @param outputsProblem what the guest reported about writing the outputs
 */
record VmEnd(
    OptionalInt exit,
    Optional<String> failure,
    boolean killed,
    boolean bootTimedOut,
    boolean stopped,
    Optional<String> guestError,
    Optional<String> outputsProblem) {

  /**
   * The run's completion.
   *
   * @param bootTimeout the boot time-out, named when it passed
   * @param until the deadline the wait stopped at, named when it passed
   * @param vmmExit the VMM's exit status, asked for only when the VM stopped before the command
   *     ended (to be named)
   * @param consoleLog where the guest's console was written, named likewise
   */
  Completion completion(Duration bootTimeout, Instant until, IntSupplier vmmExit, Path consoleLog) {
    if (failure.isPresent()) {
      return new Completion(Completion.End.ERROR, exit, failure.get());
    }
    if (killed) {
      return new Completion(Completion.End.KILLED, exit, "killed on request");
    }
    if (bootTimedOut) {
      return new Completion(
          Completion.End.ERROR,
          exit,
          "the guest did not start the command within " + bootTimeout.toSeconds() + " s");
    }
    if (stopped) {
      return new Completion(
          Completion.End.DEADLINE, exit, "workload stopped at the deadline " + until);
    }
    if (guestError.isPresent()) {
      return new Completion(Completion.End.ERROR, exit, "the guest failed: " + guestError.get());
    }
    if (exit.isEmpty()) {
      return new Completion(
          Completion.End.ERROR,
          exit,
          "the VM stopped before its command ended (exit status "
              + vmmExit.getAsInt()
              + ", console in "
              + consoleLog
              + ")");
    }
    int code = exit.getAsInt();
    // 137 = 128 + SIGKILL: the guest kernel's OOM killer, since nothing else in the guest sends it.
    return new Completion(
        Completion.End.EXIT,
        exit,
        (code == 137
                ? "exited with status 137 (killed: out of memory?)"
                : "exited with status " + code)
            + outputsProblem.map(p -> "; " + p).orElse(""));
  }
}
