package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class SubnetPoolTest {
  @Test
  void aSlashTwentyFourHoldsSixtyFourSlashThirties() {
    SubnetPool pool = SubnetPool.parse("10.213.0.0/24");
    assertThat(pool.slots()).isEqualTo(64);
    assertThat(pool.hostAddress(0)).isEqualTo("10.213.0.1");
    assertThat(pool.guestAddress(0)).isEqualTo("10.213.0.2");
    assertThat(pool.hostAddress(63)).isEqualTo("10.213.0.253");
    assertThat(pool.guestAddress(63)).isEqualTo("10.213.0.254");
  }

  @Test
  void slotsNeverLeaveThePool() {
    SubnetPool pool = SubnetPool.parse("10.213.0.0/28");
    assertThat(pool.slots()).isEqualTo(4);
    assertThatThrownBy(() -> pool.hostAddress(4)).hasMessageContaining("outside the pool");
    assertThatThrownBy(() -> pool.guestAddress(-1)).hasMessageContaining("outside the pool");
  }

  @Test
  void malformedOrMisalignedPoolsAreRefused() {
    assertThatThrownBy(() -> SubnetPool.parse("10.213.0.4/24")).hasMessageContaining("aligned");
    assertThatThrownBy(() -> SubnetPool.parse("10.213.0.0/8")).hasMessageContaining("/16 to /28");
    assertThatThrownBy(() -> SubnetPool.parse("example.com/24")).hasMessageContaining("a.b.c.d");
    assertThatThrownBy(() -> SubnetPool.parse("10.213.0.0")).hasMessageContaining("a.b.c.d");
  }

  @Test
  void tapNamesFitTheKernelsLimitAndTheFencesWildcard() {
    assertThat(SubnetPool.tapName(16383)).hasSizeLessThanOrEqualTo(15).startsWith("asbv");
  }
}
