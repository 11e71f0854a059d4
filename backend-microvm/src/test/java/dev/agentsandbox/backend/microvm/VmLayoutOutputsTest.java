package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.OutputLimits;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * How much of a run's output disk is read (issue 26 item 2): the disk's size bounds what the guest
 * can write, and the run's caps bound what the control plane reads of it.
 */
class VmLayoutOutputsTest {
  private static VmLayout layout(OutputLimits caps) {
    MicroVmConfig config = MicroVmConfig.defaults(List.of("proxy"));
    RunSpec spec =
        new RunSpec(
                "r1",
                "helper",
                "agent-sandbox/workload:dev",
                List.of("true"),
                Map.of(),
                new RunEgress(AllowList.EMPTY, Optional.empty(), List.of(), Map.of()),
                new Resources(1, 256, 128),
                Duration.ofMinutes(5),
                Instant.parse("2026-01-01T00:00:00Z"),
                false)
            .withOutputs(caps);
    SubnetPool pool = SubnetPool.parse(config.subnetPool());
    return new VmLayout(spec, config, new QemuMicroVm(config), Placement.of(0, pool, config), 1);
  }

  @Test
  void theReadStopsAtTheRunsCapPlusHeadersWhenThatIsLessThanTheDisk() {
    OutputLimits small = new OutputLimits(1 << 20, 10);
    VmLayout layout = layout(small);
    assertThat(layout.outputReadLimit())
        .isEqualTo(RunContract.outArchiveLimit(small))
        .isLessThan(layout.outputDiskBytes());
  }

  @Test
  void theReadStopsAtTheDisksSizeWhenTheCapIsLarger() {
    VmLayout layout = layout(new OutputLimits(OutputLimits.MAX_BYTES, 100));
    assertThat(layout.outputReadLimit()).isEqualTo(layout.outputDiskBytes());
  }
}
