package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.runs.RunContractServices;
import java.nio.file.Path;

/** Checks what serve's run-contract options produced. */
final class RunContractServicesProbe {
  private RunContractServicesProbe() {}

  static void check(RunContractServices.Config config, Path data) {
    assertThat(config.artifacts()).isPresent();
    assertThat(config.artifacts().get().store().describe())
        .isEqualTo("folder " + data.resolve("artifacts").toAbsolutePath().normalize());
    assertThat(config.jwt()).isEmpty();
    assertThat(config.commands()).isEmpty();
  }
}
