package dev.agentsandbox.policy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.AllowList.Verdict;
import java.util.List;
import org.junit.jupiter.api.Test;

class AllowListTest {

  @Test
  void emptyListAllowsNothing() {
    assertThat(AllowList.EMPTY.evaluate("api.vendor.com", 443)).isEqualTo(Verdict.HOST_NOT_ALLOWED);
  }

  @Test
  void portVerdictIsSeparateFromHostVerdict() {
    AllowList list = AllowList.parse(List.of("api.vendor.com", "db.example.com:5432"));
    assertThat(list.evaluate("api.vendor.com", 443)).isEqualTo(Verdict.ALLOWED);
    assertThat(list.evaluate("api.vendor.com", 22)).isEqualTo(Verdict.PORT_NOT_ALLOWED);
    assertThat(list.evaluate("db.example.com", 443)).isEqualTo(Verdict.PORT_NOT_ALLOWED);
    assertThat(list.evaluate("db.example.com", 5432)).isEqualTo(Verdict.ALLOWED);
    assertThat(list.evaluate("evil.example", 443)).isEqualTo(Verdict.HOST_NOT_ALLOWED);
  }

  @Test
  void duplicatesCollapse() {
    AllowList list = AllowList.parse(List.of("A.example.com", "a.example.com."));
    assertThat(list.asStrings()).containsExactly("a.example.com");
  }

  @Test
  void coversByOneEntryOrByThePairOfDefaultPorts() {
    AllowList list =
        AllowList.parse(List.of("*.vendor.com", "x.example.com:80", "x.example.com:443"));
    assertThat(list.covers(AllowEntry.parse("api.vendor.com"))).isTrue();
    assertThat(list.covers(AllowEntry.parse("vendor.com"))).isFalse();
    assertThat(list.covers(AllowEntry.parse("x.example.com"))).isTrue();
    assertThat(list.covers(AllowEntry.parse("x.example.com:8080"))).isFalse();
  }

  @Test
  void intersectionNeverWidensEitherSide() {
    AllowList sandbox =
        AllowList.parse(List.of("*.vendor.com", "db.example.com:5432", "a.example.org"));
    AllowList instance =
        AllowList.parse(List.of("api.vendor.com", "*.example.com", "*.example.org"));
    AllowList effective = sandbox.intersect(instance);
    // The instance's *.example.com allows 80 and 443 only, so db.example.com:5432 drops out.
    assertThat(effective.asStrings()).containsExactly("api.vendor.com", "a.example.org");
    for (AllowEntry entry : effective.entries()) {
      assertThat(sandbox.covers(entry)).as("sandbox covers %s", entry).isTrue();
      assertThat(instance.covers(entry)).as("instance covers %s", entry).isTrue();
    }
  }

  @Test
  void intersectionDropsEntriesAnotherAlreadyCovers() {
    AllowList sandbox = AllowList.parse(List.of("*.example.com", "a.example.com"));
    AllowList instance = AllowList.parse(List.of("*.example.com"));
    assertThat(sandbox.intersect(instance).asStrings()).containsExactly("*.example.com");
  }
}
