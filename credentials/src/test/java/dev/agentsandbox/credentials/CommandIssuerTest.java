package dev.agentsandbox.credentials;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Real shell scripts stand in for the operator's STS or Vault hook. */
class CommandIssuerTest {
  private static final Instant NOW = Instant.parse("2026-11-30T12:00:00Z");
  private static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);
  private static final RunIdentity RUN =
      new RunIdentity("r1", "helper", Map.of("task", "T-1"), NOW.plusSeconds(600));
  private static final String SECRET = "s3cr3t-value-9f8e7d";

  @TempDir Path dir;

  private CommandIssuer script(String body, Duration timeout) throws Exception {
    Path s = dir.resolve("mint.sh");
    Files.writeString(s, "#!/bin/sh\n" + body + "\n");
    Files.setPosixFilePermissions(s, PosixFilePermissions.fromString("rwx------"));
    return new CommandIssuer(List.of(s.toString()), timeout, CLOCK);
  }

  @Test
  void theCommandSeesTheRunAndItsAnswerBecomesTheCredential() throws Exception {
    CommandIssuer issuer =
        script(
            "printf '%s|%s|%s|%s|%s' \"$AGENT_SANDBOX_RUN_ID\" \"$AGENT_SANDBOX_AGENT\""
                + " \"$AGENT_SANDBOX_DEADLINE\" \"$AGENT_SANDBOX_LABELS\" \"$AGENT_SANDBOX_CREDENTIAL\""
                + " > "
                + dir.resolve("seen")
                + "\n"
                + "echo '{\"value\": \""
                + SECRET
                + "\", \"expires_at\": \"2026-11-30T12:05:00Z\"}'",
            Duration.ofSeconds(10));
    IssuedCredential c = issuer.issue("aws", RUN);
    assertThat(c.value()).isEqualTo(SECRET);
    assertThat(c.source()).isEqualTo("command");
    assertThat(c.expiresAt()).isEqualTo(Instant.parse("2026-11-30T12:05:00Z"));
    assertThat(Files.readString(dir.resolve("seen")))
        .isEqualTo("r1|helper|2026-11-30T12:10:00Z|{\"task\":\"T-1\"}|aws");
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "an expiry after the run's deadline | echo '{\"value\":\""
            + SECRET
            + "\",\"expires_at\":\"2026-11-30T13:00:00Z\"}' | after the run's deadline",
        "no expiry at all | echo '{\"value\":\"" + SECRET + "\"}' | without an expiry",
        "an expiry already past | echo '{\"value\":\""
            + SECRET
            + "\",\"expires_at\":\"2026-11-30T11:00:00Z\"}' | already expired",
        "a non-UTC or garbled time | echo '{\"value\":\""
            + SECRET
            + "\",\"expires_at\":\"tomorrow\"}' | RFC 3339",
        "an empty value | echo '{\"value\":\"\",\"expires_at\":\"2026-11-30T12:05:00Z\"}' | non-empty",
        "not JSON | echo " + SECRET + " | not JSON",
        "a JSON array | echo '[1]' | not a JSON object",
        "a failing command | echo oops >&2; echo '" + SECRET + "'; exit 3 | exit status 3: oops",
      })
  void refusedAnswersNeverEchoTheSecret(String why, String body, String expected) throws Exception {
    CommandIssuer issuer = script(body, Duration.ofSeconds(10));
    assertThatThrownBy(() -> issuer.issue("aws", RUN))
        .as(why)
        .isInstanceOf(UnableToIssueCredentialException.class)
        .hasMessageContaining(expected)
        .hasMessageContaining("mint credential aws for run r1")
        .hasMessageNotContaining(SECRET);
  }

  /** A Vault token of the control plane's own, which its credential helper inherits. */
  private static final String VAULT_TOKEN = "hvs.CAESIJlSx3Tf7W8Q0qL9v2nB1aXkYzPqRtU4";

  /**
   * A helper that fails loudly writes secrets to its standard error; the refusal's message (the API
   * answer, the permanent audit row) keeps that stream's start, so each row's secret must be gone
   * from it and the rest of the diagnostic kept.
   */
  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "the control plane's VAULT_TOKEN as NAME=value | echo \"vault login failed:"
            + " VAULT_TOKEN=$VAULT_TOKEN\" >&2; exit 2 | vault login failed: VAULT_TOKEN=[REDACTED]",
        "a bare Vault token, no name | echo \"permission denied for $VAULT_TOKEN\" >&2; exit 2"
            + " | permission denied for [REDACTED]",
        "an inherited secret under a name the shapes do not know | echo \"cannot reach vault with"
            + " $CP_SIGNING_SECRET\" >&2; exit 2 | cannot reach vault with [REDACTED]",
        "the credential it minted, then failed | echo '{\"value\":\""
            + SECRET
            + "\",\"expires_at\":\"2026-11-30T12:05:00Z\"}'; echo \"lease write failed for "
            + SECRET
            + "\" >&2; exit 1 | lease write failed for [REDACTED]",
        "what it printed though not JSON | echo '"
            + SECRET
            + "'; echo \"bad format: "
            + SECRET
            + "\" >&2; exit 1 | bad format: [REDACTED]",
        "an AWS secret key as a header-style pair | echo \"aws_secret_access_key ="
            + " wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\" >&2; exit 255"
            + " | aws_secret_access_key = [REDACTED]",
        "a bearer header | echo 'curl: sent Authorization: Bearer abcdefghijklmnopqrstuvwxyz' >&2;"
            + " exit 22 | curl: sent [REDACTED]",
      })
  void secretsInAFailingHelpersStandardErrorAreRedacted(String why, String body, String kept)
      throws Exception {
    Path s = dir.resolve("mint.sh");
    Files.writeString(s, "#!/bin/sh\n" + body + "\n");
    Files.setPosixFilePermissions(s, PosixFilePermissions.fromString("rwx------"));
    CommandIssuer issuer =
        new CommandIssuer(
            List.of(s.toString()),
            Duration.ofSeconds(10),
            CLOCK,
            Map.of("VAULT_TOKEN", VAULT_TOKEN, "CP_SIGNING_SECRET", "0f1e2d3c4b5a69788796"));
    assertThatThrownBy(() -> issuer.issue("aws", RUN))
        .as(why)
        .isInstanceOf(UnableToIssueCredentialException.class)
        .hasMessageContaining("exit status")
        .hasMessageContaining(kept)
        .hasMessageNotContaining(VAULT_TOKEN)
        .hasMessageNotContaining("CAESIJlSx3Tf7W8Q0qL9v2nB1aXkYzPqRtU4")
        .hasMessageNotContaining("0f1e2d3c4b5a69788796")
        .hasMessageNotContaining(SECRET)
        .hasMessageNotContaining("wJalrXUtnFEMI")
        .hasMessageNotContaining("abcdefghijklmnopqrstuvwxyz");
  }

  @Test
  void aSecretStraddlingTheCutIsRedactedBeforeTheCut() throws Exception {
    // 290 characters, then the token: cut first, its first characters would survive.
    String padding = "x".repeat(290);
    byte[] stderr = (padding + " " + VAULT_TOKEN).getBytes(StandardCharsets.UTF_8);
    String kept = CommandIssuer.redactedStderr(stderr, new byte[0], Map.of());
    assertThat(kept).doesNotContain("hvs.CAES").hasSizeLessThanOrEqualTo(300);
  }

  @ParameterizedTest(name = "{0} says secret")
  @ValueSource(
      strings = {
        "VAULT_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "DB_PASSWORD",
        "GITHUB_PAT",
        "DATABASE_URL",
        "SENTRY_DSN",
        "OAUTH_CLIENT_CREDENTIALS",
        "api_key"
      })
  void secretSoundingNames(String name) {
    assertThat(CommandIssuer.SECRET_NAME.matcher(name).find()).isTrue();
  }

  @ParameterizedTest(name = "{0} does not")
  @ValueSource(strings = {"PATH", "HOME", "LANG", "VAULT_ADDR", "USER", "SHELL"})
  void ordinaryNames(String name) {
    assertThat(CommandIssuer.SECRET_NAME.matcher(name).find()).isFalse();
  }

  @Test
  void aHangingCommandIsKilledWithItsChildrenAtTheTimeOut() throws Exception {
    Path pidFile = dir.resolve("child.pid");
    CommandIssuer issuer =
        script("sleep 300 & echo $! > " + pidFile + "; wait", Duration.ofMillis(1500));
    long start = System.nanoTime();
    assertThatThrownBy(() -> issuer.issue("aws", RUN))
        .hasMessageContaining("no answer within 1 s (killed)");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
    long child = Long.parseLong(Files.readString(pidFile).strip());
    Awaitility.await("the command's child sleep was killed too")
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(50))
        .until(() -> !ProcessHandle.of(child).map(ProcessHandle::isAlive).orElse(false));
  }

  @Test
  void floodingOutputIsRefusedWithoutBlockingTheCommand() throws Exception {
    CommandIssuer issuer =
        script("head -c 1000000 /dev/zero | tr '\\\\0' x", Duration.ofSeconds(20));
    assertThatThrownBy(() -> issuer.issue("aws", RUN))
        .hasMessageContaining("more than 65536 bytes");
  }

  @Test
  void onlyAbsoluteExecutablesAreAccepted() throws Exception {
    assertThatThrownBy(() -> new CommandIssuer(List.of("mint.sh"), Duration.ofSeconds(1), CLOCK))
        .isInstanceOf(IllegalArgumentException.class);
    Path notExec = Files.writeString(dir.resolve("plain"), "x");
    CommandIssuer issuer =
        new CommandIssuer(List.of(notExec.toString()), Duration.ofSeconds(1), CLOCK);
    assertThatThrownBy(() -> issuer.issue("aws", RUN)).hasMessageContaining("not an executable");
  }
}
