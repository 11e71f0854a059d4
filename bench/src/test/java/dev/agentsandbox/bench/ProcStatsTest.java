package dev.agentsandbox.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ProcStatsTest {

  @Test
  void sumsUserAndSystemTicksAfterTheCommandName() {
    String stat =
        "4242 (java) S 1 4242 4242 0 -1 4194560 9137 0 12 0 1234 567 0 0 20 0 31 0 851 "
            + "3799506944 10498 18446744073709551615 1 1 0 0 0 0 0 4096 17103 0 0 0 17 1 0 0";

    assertThat(ProcStats.cpuTicks(stat)).isEqualTo(1234 + 567);
  }

  @Test
  void aCommandNameWithSpacesAndParenthesesDoesNotShiftTheFields() {
    String stat =
        "77 (evil) name (x) S 1 77 77 0 -1 4194560 1 0 0 0 40 2 0 0 20 0 1 0 9 1000 10 "
            + "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0";

    assertThat(ProcStats.cpuTicks(stat)).isEqualTo(42);
  }

  @Test
  void readsResidentSetSizeInKib() {
    String status = "Name:\tsquid\nVmPeak:\t  300000 kB\nVmRSS:\t   26828 kB\nRssAnon:\t 1 kB\n";

    assertThat(ProcStats.rssKib(status)).isEqualTo(26828);
  }

  @Test
  void aZombieWithoutVmRssIsAnError() {
    assertThatThrownBy(() -> ProcStats.rssKib("Name:\tsquid\nState:\tZ (zombie)\n"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("VmRSS");
  }

  @Test
  void readsThisProcessFromProc() {
    long pid = ProcessHandle.current().pid();

    assertThat(ProcStats.rssKib(pid)).isPositive();
    assertThat(ProcStats.cpuTicks(pid)).isNotNegative();
  }
}
