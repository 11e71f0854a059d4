package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Versioned configuration with optimistic concurrency, shared by SQLite and PostgreSQL. */
abstract class ConfigRepositoryContract extends StoreTestBase {

  static final String KEY = "agent-sandbox";

  static AuditEvent update(String actor) {
    return new AuditEvent("agent_sandbox.config.update", actor, null, null, json("{\"k\":1}"));
  }

  @Test
  void nothingIsStoredAtFirst() {
    assertThat(store.configs().current(KEY)).isEmpty();
    assertThat(store.configs().history(KEY, 10)).isEmpty();
  }

  @Test
  void firstSaveExpectsVersionZeroAndCreatesVersionOne() {
    StoredConfig saved = store.configs().save(KEY, 0, json("{\"enabled\":true}"), update("alice"));

    assertThat(saved.version()).isEqualTo(1);
    assertThat(saved.updatedBy()).isEqualTo("alice");
    assertThat(saved.updatedAt()).isEqualTo(START);
    assertThat(store.configs().current(KEY)).contains(saved);
  }

  @Test
  void everyVersionIsKeptNewestFirst() {
    store.configs().save(KEY, 0, json("{\"v\":1}"), update("alice"));
    clock.advance(Duration.ofMinutes(1));
    store.configs().save(KEY, 1, json("{\"v\":2}"), update("bob"));
    clock.advance(Duration.ofMinutes(1));
    store.configs().save(KEY, 2, json("{\"v\":3}"), update("alice"));

    assertThat(store.configs().history(KEY, 10))
        .extracting(c -> c.document().get("v").asInt())
        .containsExactly(3, 2, 1);
    assertThat(store.configs().history(KEY, 2))
        .extracting(StoredConfig::version)
        .containsExactly(3L, 2L);
    assertThat(store.configs().current(KEY).orElseThrow().updatedBy()).isEqualTo("alice");
  }

  @Test
  void keysAreIndependent() {
    store.configs().save(KEY, 0, json("{\"a\":1}"), update("alice"));
    store.configs().save("egress-policy", 0, json("{\"b\":2}"), update("alice"));

    assertThat(store.configs().current("egress-policy").orElseThrow().document())
        .isEqualTo(json("{\"b\":2}"));
    assertThat(store.configs().current(KEY).orElseThrow().version()).isEqualTo(1);
  }

  @Test
  void staleVersionIsAConflictNamingBothVersions() {
    store.configs().save(KEY, 0, json("{\"v\":1}"), update("alice"));
    store.configs().save(KEY, 1, json("{\"v\":2}"), update("alice"));

    assertThatThrownBy(() -> store.configs().save(KEY, 1, json("{\"v\":9}"), update("bob")))
        .isInstanceOfSatisfying(
            VersionConflictException.class,
            e -> {
              assertThat(e.key()).isEqualTo(KEY);
              assertThat(e.expected()).isEqualTo(1);
              assertThat(e.actual()).isEqualTo(2);
            })
        .hasMessageContaining("version 1 was expected but the current version is 2");
    assertThat(store.configs().current(KEY).orElseThrow().document().get("v").asInt()).isEqualTo(2);
  }

  @Test
  void saveAgainstANonexistentVersionIsAConflict() {
    assertThatThrownBy(() -> store.configs().save(KEY, 3, json("{}"), update("bob")))
        .isInstanceOf(VersionConflictException.class)
        .hasMessageContaining("current version is 0");
  }

  @Test
  void savedConfigAndItsAuditRowAreOneTransaction() {
    store.configs().save(KEY, 0, json("{\"v\":1}"), update("alice"));
    assertThat(store.audit().query(AuditQuery.all(10)))
        .singleElement()
        .satisfies(row -> assertThat(row.type()).isEqualTo("agent_sandbox.config.update"));

    assertThatThrownBy(() -> store.configs().save(KEY, 0, json("{\"v\":2}"), update("bob")))
        .isInstanceOf(VersionConflictException.class);

    // The refused save left neither a version nor an audit row behind.
    assertThat(store.audit().query(AuditQuery.all(10))).hasSize(1);
    assertThat(store.configs().history(KEY, 10)).hasSize(1);
  }

  @Test
  void failingAuditAppendRollsTheConfigBack() throws Exception {
    // Break the audit table so that the append inside the save fails after the config insert.
    fixture.execute("DELETE FROM audit_head");

    assertThatThrownBy(() -> store.configs().save(KEY, 0, json("{\"v\":1}"), update("alice")))
        .isInstanceOf(UnableToAccessStoreException.class)
        .hasMessageContaining("save configuration agent-sandbox");

    assertThat(store.configs().current(KEY)).isEmpty();
  }

  @Test
  void documentsComeBackEqualWithKeysSorted() {
    store.configs().save(KEY, 0, json("{\"z\":{\"b\":1,\"a\":[1,2]},\"a\":null}"), update("a"));

    StoredConfig read = store.configs().current(KEY).orElseThrow();
    assertThat(read.document()).isEqualTo(json("{\"a\":null,\"z\":{\"a\":[1,2],\"b\":1}}"));
    assertThat(read.document().fieldNames()).toIterable().containsExactly("a", "z");
  }
}
