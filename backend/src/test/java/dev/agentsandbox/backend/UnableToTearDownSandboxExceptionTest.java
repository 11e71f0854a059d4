package dev.agentsandbox.backend;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class UnableToTearDownSandboxExceptionTest {
  @Test
  void nothingLeftThrowsNothing() {
    assertThatCode(
            () ->
                UnableToTearDownSandboxException.throwIfAny(
                    "removing the sandbox of run r1", List.of()))
        .doesNotThrowAnyException();
  }

  @Test
  void whatIsLeftIsNamedOneByOneWithTheReaperAsTheHint() {
    assertThatThrownBy(
            () ->
                UnableToTearDownSandboxException.throwIfAny(
                    "removing the microVM of run r2",
                    List.of("tap asbv3: busy", "run directory /run/x: not empty")))
        .isInstanceOf(UnableToTearDownSandboxException.class)
        .hasMessage(
            "removing the microVM of run r2: tap asbv3: busy; run directory /run/x: not empty"
                + " (the reaper retries when the run's expiry passes)");
  }
}
