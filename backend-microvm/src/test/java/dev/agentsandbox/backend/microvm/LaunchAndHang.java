package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.testing.ItRuns;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * A stand-in control plane for {@link MicroVmLifecycleIT}: launches one VM, waits until the guest
 * reports that its command runs, says so, and waits to be killed with SIGKILL, so that nothing it
 * created is torn down by it.
 *
 * <p>It waits for the guest because QEMU connects to the control plane's channel sockets while it
 * starts: killed before that, the control plane takes QEMU with it ("Connection refused"), and the
 * test would not be of a control plane killed mid-run. One loaded CI run did exactly that.
 */
public final class LaunchAndHang {
  static final String LAUNCHED = "launched";

  private LaunchAndHang() {}

  public static void main(String[] args) throws InterruptedException {
    MicroVmBackend backend = new MicroVmBackend(MicroVmItSupport.config());
    MicroVmSandbox sandbox =
        (MicroVmSandbox)
            backend.launch(
                MicroVmItSupport.SUITE.spec(
                    args[0],
                    List.of("sleep", "600"),
                    ItRuns.noEgress(),
                    MicroVmItSupport.SUITE.smallCaps(),
                    Duration.ofMinutes(10)),
                SandboxListener.NONE);
    Instant giveUp = Instant.now().plus(Duration.ofMinutes(3));
    while (sandbox.guestReadyAt().isEmpty()) {
      if (Instant.now().isAfter(giveUp)) {
        System.out.println("the guest did not report ready within 3 minutes");
        System.exit(1);
      }
      Thread.sleep(100);
    }
    System.out.println(LAUNCHED);
    System.out.flush();
    Thread.sleep(Duration.ofMinutes(10));
  }
}
