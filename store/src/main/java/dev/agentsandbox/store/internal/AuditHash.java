package dev.agentsandbox.store.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The audit chain's hash: lowercase hex SHA-256 of the UTF-8 bytes of the JSON array {@code [id,
 * timeMillis, type, actor, agent, runId, dataText, prevHash]} written without whitespace, where
 * {@code agent} and {@code runId} may be {@code null} and {@code dataText} is the stored canonical
 * data JSON as a string. JSON escaping makes the encoding unambiguous (no field can spill into the
 * next), and any JSON library can reproduce it.
 */
public final class AuditHash {

  /** The prev-hash of the first row. */
  public static final String GENESIS = "0".repeat(64);

  private AuditHash() {}

  public static String of(
      long id,
      long timeMillis,
      String type,
      String actor,
      String agent,
      String runId,
      String dataText,
      String prevHash) {
    ArrayNode fields = JsonNodeFactory.instance.arrayNode(8);
    fields.add(id).add(timeMillis).add(type).add(actor).add(agent).add(runId);
    fields.add(dataText).add(prevHash);
    return sha256Hex(CanonicalJson.write(fields));
  }

  /** Lowercase hex SHA-256 of the UTF-8 bytes of {@code text}. */
  public static String sha256Hex(String text) {
    try {
      MessageDigest digest = MessageDigest.getInstance("SHA-256");
      return HexFormat.of().formatHex(digest.digest(text.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }
}
