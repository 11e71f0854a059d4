package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.RecordComponent;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** Each with-er changes exactly the fields it names and validates the copy like a new config. */
class MicroVmConfigTest {
  private static final MicroVmConfig BASE =
      MicroVmConfig.defaults(List.of("agent-sandbox", "proxy"));

  @Test
  void eachWithChangesOnlyWhatItNames() throws Exception {
    MicroVmConfig tcg = BASE.toBuilder().accel("tcg").build();
    assertChangedOnly(tcg, "accel");
    assertThat(tcg.emulated()).isTrue();
    MicroVmConfig moved =
        BASE.toBuilder().runDir(Path.of("/tmp/vm-runs")).subnetPool("10.214.0.0/24").build();
    assertChangedOnly(moved, "runDir", "subnetPool");
    assertThat(moved.runDir()).isEqualTo(Path.of("/tmp/vm-runs"));
    assertThat(moved.subnetPool()).isEqualTo("10.214.0.0/24");
    assertChangedOnly(
        BASE.toBuilder().qemu(Path.of("/opt/qemu/bin/qemu-system-x86_64")).build(), "qemu");
  }

  @Test
  void aCopyIsValidatedLikeANewConfig() {
    assertThatThrownBy(() -> BASE.toBuilder().accel("hvf").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("accel must be kvm or tcg");
  }

  private static void assertChangedOnly(MicroVmConfig changed, String... names) throws Exception {
    Set<String> differing = new TreeSet<>();
    for (RecordComponent component : MicroVmConfig.class.getRecordComponents()) {
      Object before = component.getAccessor().invoke(BASE);
      Object after = component.getAccessor().invoke(changed);
      if (!before.equals(after)) {
        differing.add(component.getName());
      }
    }
    assertThat(differing).containsExactlyInAnyOrder(names);
  }
}
