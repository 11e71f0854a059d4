package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.SandboxListener;
import java.time.Duration;
import java.util.List;

/**
 * A stand-in control plane for {@link MicroVmLifecycleIT}: launches one VM, says so, and waits to
 * be killed with SIGKILL, so that nothing it created is torn down by it.
 */
public final class LaunchAndHang {
  static final String LAUNCHED = "launched";

  private LaunchAndHang() {}

  public static void main(String[] args) throws InterruptedException {
    MicroVmBackend backend = new MicroVmBackend(MicroVmItSupport.config());
    backend.launch(
        MicroVmItSupport.spec(
            args[0],
            List.of("sleep", "600"),
            MicroVmItSupport.noEgress(),
            MicroVmItSupport.smallCaps(),
            Duration.ofMinutes(10)),
        SandboxListener.NONE);
    System.out.println(LAUNCHED);
    System.out.flush();
    Thread.sleep(Duration.ofMinutes(10));
  }
}
