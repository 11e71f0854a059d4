package dev.agentsandbox.server.governance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.ConfigProblem;
import dev.agentsandbox.policy.config.Loosening;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.policy.governance.GovernedDocument;
import dev.agentsandbox.policy.text.ShownText;
import dev.agentsandbox.server.evidence.ChangeImpact;
import dev.agentsandbox.server.evidence.ChangeImpacts;
import dev.agentsandbox.server.evidence.EvidenceJson;
import dev.agentsandbox.server.evidence.EvidenceWindow;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.store.StoredConfig;
import dev.agentsandbox.store.TokenInfo;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads and changes governed documents: checks the version the caller read, computes every
 * loosening, demands {@code governance.weaken} and a reason for any, and saves the new version with
 * its {@code agent_sandbox.config.update} audit row in one transaction. Refusals are audited as
 * {@code agent_sandbox.config.refused}. Every change, saved, previewed or refused, also answers its
 * impact on the recorded egress of each agent whose lists it changes ({@link ChangeImpacts}), and
 * the audit row records its counts. Every refusal is a {@link GovernanceException}; the HTTP layer
 * decides what status it is. Thread-safe.
 */
public final class GovernedConfigs {
  public static final String UPDATE_EVENT = "agent_sandbox.config.update";
  public static final String REFUSED_EVENT = "agent_sandbox.config.refused";

  /** Reasons are for change tickets and a sentence; anything longer is a mistake. */
  static final int MAX_REASON_LENGTH = 1000;

  private static final Pattern ETAG = Pattern.compile("(?:W/)?\"?([0-9]{1,18})\"?");

  private final Store store;
  private final ObjectMapper mapper;
  private final GovernanceMetrics metrics;
  private final ChangeImpacts impacts;

  public GovernedConfigs(
      Store store, ObjectMapper mapper, GovernanceMetrics metrics, ChangeImpacts impacts) {
    this.store = store;
    this.mapper = mapper;
    this.metrics = metrics;
    this.impacts = impacts;
  }

  /** Both documents as they are now. */
  public GovernedDocument.Documents documents() {
    return new GovernedDocument.Documents(
        current(GovernedDocument.SANDBOX).document(),
        current(GovernedDocument.EGRESS_POLICY).document());
  }

  /** The current version of a document, or its defaults as version 0. */
  public <T> Versioned<T> current(GovernedDocument<T> kind) {
    Optional<StoredConfig> stored = store.configs().current(kind.key());
    if (stored.isEmpty()) {
      return new Versioned<>(kind.defaults(), 0, null, null);
    }
    StoredConfig config = stored.get();
    T document = kind.reader().apply(mapper.convertValue(config.document(), Object.class));
    return new Versioned<>(document, config.version(), config.updatedAt(), config.updatedBy());
  }

  /**
   * What an accepted change did, or with {@code dryRun} would do: then {@code saved} is the
   * document as it would be saved, under the version it replaces (nothing was stored).
   */
  public record Change<T>(
      Versioned<T> saved,
      List<Loosening> loosenings,
      String reason,
      boolean dryRun,
      ChangeImpact impact) {}

  /**
   * Applies a {@code PUT} body.
   *
   * @param body the request body: the document plus optional {@code version} and {@code reason}
   * @param ifMatch the {@code If-Match} header, if sent
   * @param actor the authenticated token (already checked for {@code agent_sandbox.configure})
   * @param dryRun makes every check a save makes (validation, version, governance) and answers or
   *     refuses exactly as the save would, but stores nothing and writes no audit row: a preview is
   *     not an attempt
   * @param window the stretch of the audit log the change's impact is computed over
   */
  public <T> Change<T> update(
      GovernedDocument<T> kind,
      JsonNode body,
      Optional<String> ifMatch,
      TokenInfo actor,
      boolean dryRun,
      EvidenceWindow window) {
    if (!body.isObject()) {
      throw new InvalidChangeException("the body must be a JSON object", List.of());
    }
    Map<String, Object> tree = new LinkedHashMap<>(objectTree(body));
    Optional<Long> bodyVersion = bodyVersion(tree.remove("version"));
    String reason = reason(tree.remove("reason"));
    Optional<Long> headerVersion = ifMatch.map(GovernedConfigs::parseIfMatch);
    if (bodyVersion.isPresent()
        && headerVersion.isPresent()
        && !bodyVersion.get().equals(headerVersion.get())) {
      throw new InvalidIfMatchException(
          "If-Match says version "
              + headerVersion.get()
              + " but the body says "
              + bodyVersion.get()
              + " (send one, or the same in both)");
    }
    T after = kind.reader().apply(tree);
    Versioned<T> before = current(kind);
    long expected = headerVersion.or(() -> bodyVersion).orElse(-1L);
    if (expected < 0) {
      if (before.version() != 0) {
        throw new VersionRequiredException(kind.key(), before.version());
      }
      expected = 0;
    }
    if (expected != before.version()) {
      throw new StaleVersionException(kind.key(), expected, before.version());
    }
    List<Loosening> loosenings = kind.loosenings().apply(before.document(), after);
    Map<String, Object> afterTree = kind.writer().apply(after);
    List<String> missing = missing(loosenings, reason, actor);
    boolean refused = !missing.isEmpty();
    GovernedDocument.Documents now = documents();
    ChangeImpact impact =
        impacts.between(
            kind.egress().apply(before.document(), now), kind.egress().apply(after, now), window);
    // One audit row either way: a refusal names the version the change was made to (nothing new
    // was saved) and what was missing; a save names the version it created.
    if (dryRun && !refused) {
      return new Change<>(
          new Versioned<>(after, before.version(), before.updatedAt(), before.updatedBy()),
          loosenings,
          reason,
          true,
          impact);
    }
    Map<String, Object> data = new LinkedHashMap<>();
    data.put("config", kind.key());
    data.put("version", refused ? before.version() : before.version() + 1);
    data.put("before", kind.writer().apply(before.document()));
    data.put("after", afterTree);
    data.put("weakening", !loosenings.isEmpty());
    data.put("loosenings", looseningRows(loosenings));
    data.put("reason", reason);
    // What the approver saw before saving, as counts (docs/api.md, "Impact of a change").
    data.put("impact", EvidenceJson.impactCounts(impact));
    if (refused) {
      data.put("missing", missing);
      if (!dryRun) {
        // A preview is not an attempt: it is neither audited nor counted.
        store
            .audit()
            .append(
                new AuditEvent(REFUSED_EVENT, actor.name(), null, null, mapper.valueToTree(data)));
        metrics.configRefused(kind.key());
      }
      throw new WeakeningRefusedException(
          refusal(kind, loosenings, missing, actor),
          loosenings,
          missing,
          EvidenceJson.impact(impact));
    }
    StoredConfig saved =
        store
            .configs()
            .save(
                kind.key(),
                expected,
                mapper.valueToTree(afterTree),
                new AuditEvent(UPDATE_EVENT, actor.name(), null, null, mapper.valueToTree(data)));
    metrics.configUpdated(kind.key(), !loosenings.isEmpty());
    return new Change<>(
        new Versioned<>(after, saved.version(), saved.updatedAt(), saved.updatedBy()),
        loosenings,
        reason,
        false,
        impact);
  }

  /** What a change with these loosenings lacks: nothing for a tightening. */
  private static List<String> missing(List<Loosening> loosenings, String reason, TokenInfo actor) {
    List<String> missing = new ArrayList<>();
    if (loosenings.isEmpty()) {
      return missing;
    }
    if (!actor.scopes().contains(Scopes.GOVERNANCE_WEAKEN)) {
      missing.add(Scopes.GOVERNANCE_WEAKEN);
    }
    if (reason == null) {
      missing.add("reason");
    }
    return missing;
  }

  private static String refusal(
      GovernedDocument<?> kind, List<Loosening> loosenings, List<String> missing, TokenInfo actor) {
    return "update "
        + kind.key()
        + ": the change loosens "
        + loosenings.size()
        + (loosenings.size() == 1 ? " thing" : " things")
        + " ("
        + String.join("; ", loosenings.stream().map(Loosening::toString).toList())
        + ") and needs "
        + describeMissing(missing, actor);
  }

  private static String describeMissing(List<String> missing, TokenInfo actor) {
    List<String> parts = new ArrayList<>();
    if (missing.contains(Scopes.GOVERNANCE_WEAKEN)) {
      parts.add(
          "the scope " + Scopes.GOVERNANCE_WEAKEN + ", which token '" + actor.name() + "' lacks");
    }
    if (missing.contains("reason")) {
      parts.add("a non-empty \"reason\" (such as a change ticket)");
    }
    return String.join(" and ", parts);
  }

  /** Loosenings as the rows of the API's answers and of audit data: path, kind, detail. */
  public static List<Map<String, Object>> looseningRows(List<Loosening> loosenings) {
    return loosenings.stream()
        .map(
            l -> {
              Map<String, Object> row = new LinkedHashMap<>();
              row.put("path", l.path());
              row.put("kind", l.kind().wireName());
              row.put("detail", l.detail());
              return row;
            })
        .toList();
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> objectTree(JsonNode body) {
    return (Map<String, Object>) mapper.convertValue(body, Object.class);
  }

  private static Optional<Long> bodyVersion(Object value) {
    if (value == null) {
      return Optional.empty();
    }
    if (value instanceof Number number) {
      try {
        long version = new BigDecimal(number.toString()).longValueExact();
        if (version >= 0) {
          return Optional.of(version);
        }
      } catch (ArithmeticException | NumberFormatException e) {
        // falls through to the refusal below
      }
    }
    throw new InvalidChangeException(
        "version: must be the whole number from GET (0 when nothing was saved yet)",
        List.of(new ConfigProblem("version", "must be a whole number")));
  }

  private static String reason(Object value) {
    if (value == null) {
      return null;
    }
    if (!(value instanceof String text)) {
      throw new InvalidChangeException(
          "reason: must be a string", List.of(new ConfigProblem("reason", "must be a string")));
    }
    String trimmed = text.strip();
    if (trimmed.length() > MAX_REASON_LENGTH) {
      String tooLong = "longer than " + MAX_REASON_LENGTH + " characters";
      throw new InvalidChangeException(
          "reason: " + tooLong, List.of(new ConfigProblem("reason", tooLong)));
    }
    // A reason is read in the audit log, the CLI's terminal and the console: an escape sequence
    // (OSC 52 sets the reader's clipboard), a bidirectional control or an invisible character
    // would make it say something else there than what was stored.
    Optional<ShownText.Finding> unsafe = ShownText.firstRefused(trimmed, ShownText.Rule.TEXT);
    if (unsafe.isPresent()) {
      String problem =
          "contains "
              + unsafe.get().describe()
              + " (a reason is one line of plain text: no control, bidirectional or invisible"
              + " characters)";
      throw new InvalidChangeException(
          "reason: " + problem, List.of(new ConfigProblem("reason", problem)));
    }
    return trimmed.isEmpty() ? null : trimmed;
  }

  static long parseIfMatch(String header) {
    Matcher matcher = ETAG.matcher(header.trim());
    if (!matcher.matches()) {
      throw new InvalidIfMatchException(
          "If-Match must be the ETag from GET, such as \"3\" (a wildcard * is refused: it would"
              + " overwrite whatever is there)");
    }
    return Long.parseLong(matcher.group(1));
  }
}
