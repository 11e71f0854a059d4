package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.store.internal.AuditHash;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** API tokens: shown once, stored hashed, revocable, expiring. Shared by both dialects. */
abstract class TokenStoreContract extends StoreTestBase {

  static final Set<String> SCOPES = Set.of("agent_sandbox.read", "audit.read");

  @Test
  void createdSecretAuthenticatesWithItsScopes() {
    IssuedToken issued = store.tokens().create("ci", SCOPES, null);

    assertThat(issued.secret()).startsWith("asb_").hasSize(4 + 43);
    TokenInfo info = store.tokens().authenticate(issued.secret()).orElseThrow();
    assertThat(info.name()).isEqualTo("ci");
    assertThat(info.scopes()).containsExactly("agent_sandbox.read", "audit.read");
    assertThat(info.createdAt()).isEqualTo(START);
    assertThat(info.expiresAt()).isNull();
    assertThat(info.revokedAt()).isNull();
  }

  @Test
  void onlyAHashOfTheSecretIsStored() throws Exception {
    IssuedToken issued = store.tokens().create("ci", SCOPES, null);

    List<String> stored = fixture.queryValues("SELECT * FROM api_token");

    String random = issued.secret().substring(TokenStore.SECRET_PREFIX.length());
    assertThat(stored).isNotEmpty().noneMatch(value -> value != null && value.contains(random));
    assertThat(stored).contains(AuditHash.sha256Hex(issued.secret()));
  }

  /**
   * A token an operator creates or revokes is on the audit log, in the same transaction: its name,
   * scopes and expiry, never the secret nor the secret's hash.
   */
  @Test
  void creatingAndRevokingATokenIsAuditedWithoutItsSecret() throws Exception {
    java.time.Instant expiry = START.plus(Duration.ofDays(30));
    IssuedToken issued = store.tokens().create("ci", SCOPES, expiry, "cli:alice");
    assertThat(store.tokens().revoke("ci", "cli:bob")).isTrue();
    assertThat(store.tokens().revoke("ci", "cli:bob")).as("nothing left to revoke").isFalse();

    List<AuditRow> rows =
        store.audit().query(new AuditQuery("agent_sandbox.token", null, null, null, null, 10));
    assertThat(rows)
        .extracting(AuditRow::type)
        .containsExactly(TokenAudit.CREATE, TokenAudit.REVOKE);
    assertThat(rows).extracting(AuditRow::actor).containsExactly("cli:alice", "cli:bob");
    assertThat(rows.get(0).data().toString())
        .isEqualTo(
            "{\"agents\":null,\"expires_at\":\""
                + expiry
                + "\",\"name\":\"ci\",\"scopes\":[\"agent_sandbox.read\",\"audit.read\"]}");
    assertThat(rows.get(1).data().path("name").asText()).isEqualTo("ci");
    assertThat(rows.get(1).data().path("created_at").asText()).isEqualTo(START.toString());
    String all = rows.toString();
    assertThat(all)
        .doesNotContain(issued.secret().substring(TokenStore.SECRET_PREFIX.length()))
        .doesNotContain(AuditHash.sha256Hex(issued.secret()));
    assertThat(store.audit().verify().ok()).isTrue();
  }

  @Test
  void aTokenLimitedToAgentsKeepsThemAndItsRowsNameThem() {
    AgentGrant grant = AgentGrant.only(List.of("planner", "helper"));
    IssuedToken issued =
        store.tokens().create("team-a", Set.of("agent_sandbox.run"), grant, null, "cli:alice");

    TokenInfo info = store.tokens().authenticate(issued.secret()).orElseThrow();
    assertThat(info.agents()).isEqualTo(grant);
    assertThat(info.agents().named()).containsExactly("helper", "planner");
    assertThat(store.tokens().list())
        .filteredOn(t -> t.name().equals("team-a"))
        .singleElement()
        .extracting(TokenInfo::agents)
        .isEqualTo(grant);
    assertThat(store.tokens().create("every", SCOPES, null).secret())
        .satisfies(
            secret ->
                assertThat(store.tokens().authenticate(secret).orElseThrow().agents())
                    .isEqualTo(AgentGrant.EVERY));

    assertThat(store.tokens().revoke("team-a", "cli:bob")).isTrue();
    List<AuditRow> rows =
        store.audit().query(new AuditQuery("agent_sandbox.token", null, null, null, null, 10));
    assertThat(rows)
        .extracting(r -> r.data().path("agents").toString())
        .containsExactly("[\"helper\",\"planner\"]", "[\"helper\",\"planner\"]");
  }

  @Test
  void aRunsOwnTokenHasNoRowsOfItsOwn() {
    store.tokens().create("run-r1", Set.of(TokenStore.runScope("r1")), START.plusSeconds(60));
    store.tokens().revoke("run-r1");
    assertThat(
            store.audit().query(new AuditQuery("agent_sandbox.token", null, null, null, null, 10)))
        .isEmpty();
  }

  @Test
  void aTakenNameWritesNoRow() {
    store.tokens().create("ci", SCOPES, null, "cli:alice");
    assertThatThrownBy(() -> store.tokens().create("ci", SCOPES, null, "cli:alice"))
        .isInstanceOf(TokenNameTakenException.class);
    assertThat(
            store.audit().query(new AuditQuery("agent_sandbox.token", null, null, null, null, 10)))
        .hasSize(1);
  }

  @Test
  void secretsDoNotAppearInToString() {
    IssuedToken issued = store.tokens().create("ci", SCOPES, null);

    assertThat(issued.toString()).doesNotContain(issued.secret().substring(4)).contains("ci");
    assertThat(store.tokens().list().toString()).doesNotContain(issued.secret().substring(4));
  }

  @Test
  void secretsAreDistinct() {
    IssuedToken first = store.tokens().create("one", SCOPES, null);
    IssuedToken second = store.tokens().create("two", SCOPES, null);

    assertThat(first.secret()).isNotEqualTo(second.secret());
  }

  @Test
  void unknownAndMalformedSecretsAreRejected() {
    IssuedToken issued = store.tokens().create("ci", SCOPES, null);

    assertThat(store.tokens().authenticate(issued.secret() + "x")).isEmpty();
    assertThat(store.tokens().authenticate(issued.secret().substring(4))).isEmpty();
    assertThat(store.tokens().authenticate("asb_")).isEmpty();
    assertThat(store.tokens().authenticate("")).isEmpty();
    assertThat(store.tokens().authenticate(null)).isEmpty();
  }

  @Test
  void revokedTokenNoLongerAuthenticates() {
    IssuedToken issued = store.tokens().create("ci", SCOPES, null);
    clock.advance(Duration.ofMinutes(5));

    assertThat(store.tokens().revoke("ci")).isTrue();
    assertThat(store.tokens().revoke("ci")).isFalse();
    assertThat(store.tokens().authenticate(issued.secret())).isEmpty();
    assertThat(store.tokens().list())
        .singleElement()
        .satisfies(t -> assertThat(t.revokedAt()).isEqualTo(START.plus(Duration.ofMinutes(5))));
    assertThat(store.tokens().countActive()).isZero();
  }

  @Test
  void revokingAnUnknownNameReportsFalse() {
    assertThat(store.tokens().revoke("nobody")).isFalse();
  }

  @Test
  void expiredTokenNoLongerAuthenticates() {
    IssuedToken issued = store.tokens().create("ci", SCOPES, START.plus(Duration.ofDays(30)));
    clock.advance(Duration.ofDays(30).minusMillis(1));
    assertThat(store.tokens().authenticate(issued.secret())).isPresent();
    assertThat(store.tokens().countActive()).isEqualTo(1);

    clock.advance(Duration.ofMillis(1));

    assertThat(store.tokens().authenticate(issued.secret())).isEmpty();
    assertThat(store.tokens().countActive()).isZero();
  }

  @Test
  void activeNameCannotBeTakenTwice() {
    store.tokens().create("ci", SCOPES, null);

    assertThatThrownBy(() -> store.tokens().create("ci", SCOPES, null))
        .isInstanceOf(TokenNameTakenException.class)
        .hasMessageContaining("create token ci: an active token already has this name");
  }

  @Test
  void revokedOrExpiredNameCanBeReused() {
    store.tokens().create("ci", SCOPES, null);
    store.tokens().revoke("ci");
    IssuedToken second = store.tokens().create("ci", SCOPES, START.plus(Duration.ofHours(1)));
    clock.advance(Duration.ofHours(2));

    IssuedToken third = store.tokens().create("ci", Set.of("agent_sandbox.run"), null);

    assertThat(store.tokens().authenticate(second.secret())).isEmpty();
    assertThat(store.tokens().authenticate(third.secret()).orElseThrow().scopes())
        .containsExactly("agent_sandbox.run");
    assertThat(store.tokens().list()).hasSize(3);
    assertThat(store.tokens().countActive()).isEqualTo(1);
  }

  @Test
  void listShowsEveryTokenOldestFirst() {
    store.tokens().create("b", SCOPES, null);
    clock.advance(Duration.ofSeconds(1));
    store.tokens().create("a", Set.of("governance.weaken"), null);

    assertThat(store.tokens().list()).extracting(TokenInfo::name).containsExactly("b", "a");
    assertThat(store.tokens().countActive()).isEqualTo(2);
  }

  @Test
  void invalidInputIsRefusedBeforeTouchingTheDatabase() {
    assertThatThrownBy(() -> store.tokens().create("has space", SCOPES, null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.tokens().create("ci", Set.of(), null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.tokens().create("ci", Set.of("a b"), null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.tokens().create("ci", SCOPES, START.minusSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not in the future");
    assertThat(store.tokens().list()).isEmpty();
  }
}
