package dev.agentsandbox.cli;

import dev.agentsandbox.artifacts.ArtifactStore;
import dev.agentsandbox.artifacts.FolderArtifactStore;
import dev.agentsandbox.artifacts.S3ArtifactStore;
import dev.agentsandbox.credentials.CommandIssuer;
import dev.agentsandbox.credentials.CommandRevoker;
import dev.agentsandbox.credentials.JwtIssuer;
import dev.agentsandbox.credentials.JwtKeyRing;
import dev.agentsandbox.runs.RunContractServices;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/** Turns {@code serve}'s run-contract options into artifact storage, JWT keys and commands. */
final class RunContractOptions {
  private RunContractOptions() {}

  static RunContractServices.Config config(ServeCommand options, Path dataDir) {
    ArtifactStore store;
    if (options.artifactsS3Bucket != null && !options.artifactsS3Bucket.isBlank()) {
      var builder =
          S3Client.builder()
              .region(Region.of(options.artifactsS3Region))
              .httpClient(UrlConnectionHttpClient.create());
      if (options.artifactsS3Endpoint != null && !options.artifactsS3Endpoint.isBlank()) {
        builder.endpointOverride(URI.create(options.artifactsS3Endpoint)).forcePathStyle(true);
      }
      store =
          new S3ArtifactStore(
              builder.build(), options.artifactsS3Bucket, options.artifactsS3Prefix);
    } else {
      store =
          new FolderArtifactStore(
              options.artifactsDir != null ? options.artifactsDir : dataDir.resolve("artifacts"));
    }
    Optional<JwtIssuer> jwt = Optional.empty();
    if (options.jwtKeys != null) {
      if (options.jwtActiveKid == null || options.jwtActiveKid.isBlank()) {
        throw new IllegalArgumentException("--jwt-keys needs --jwt-active-kid KID");
      }
      jwt =
          Optional.of(
              new JwtIssuer(
                  new JwtKeyRing(options.jwtKeys, options.jwtActiveKid),
                  options.jwtIssuer,
                  Clock.systemUTC()));
    }
    if (options.credentialCommandTimeout < 1 || options.credentialCommandTimeout > 600) {
      throw new IllegalArgumentException("--credential-command-timeout must be 1 to 600 seconds");
    }
    Map<String, CommandIssuer> commands = new LinkedHashMap<>();
    for (String entry : options.credentialCommands) {
      int eq = entry.indexOf('=');
      if (eq <= 0 || !entry.substring(0, eq).matches("[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")) {
        throw new IllegalArgumentException(
            "--credential-command " + entry + ": expected NAME=PATH with NAME a lower-case label");
      }
      commands.put(
          entry.substring(0, eq),
          new CommandIssuer(
              List.of(entry.substring(eq + 1)),
              Duration.ofSeconds(options.credentialCommandTimeout),
              Clock.systemUTC()));
    }
    Map<String, CommandRevoker> revokers = new LinkedHashMap<>();
    for (String entry : options.credentialRevokeCommands) {
      int eq = entry.indexOf('=');
      if (eq <= 0 || !commands.containsKey(entry.substring(0, eq))) {
        throw new IllegalArgumentException(
            "--credential-revoke-command "
                + entry
                + ": expected NAME=PATH with NAME a registered --credential-command (registered: "
                + commands.keySet()
                + ")");
      }
      revokers.put(
          entry.substring(0, eq),
          new CommandRevoker(
              List.of(entry.substring(eq + 1)),
              Duration.ofSeconds(options.credentialCommandTimeout)));
    }
    RunContractServices.Artifacts artifacts =
        RunContractServices.Artifacts.of(store, dataDir.resolve("artifacts-spool"));
    if (options.artifactsRetention != null) {
      artifacts = artifacts.keptFor(retention(options.artifactsRetention));
    }
    return new RunContractServices.Config(Optional.of(artifacts), jwt, commands, revokers);
  }

  private static final Pattern AGE = Pattern.compile("([1-9][0-9]{0,5})([mhd])");

  /** {@code 90m}, {@code 12h}, {@code 30d}: at least a minute, at most 999999 days. */
  static Duration retention(String value) {
    Matcher age = AGE.matcher(value);
    if (!age.matches()) {
      throw new IllegalArgumentException(
          "--artifacts-retention '"
              + value
              + "': expected a positive age in minutes, hours or days (90m, 12h, 30d)");
    }
    long n = Long.parseLong(age.group(1));
    return switch (age.group(2)) {
      case "m" -> Duration.ofMinutes(n);
      case "h" -> Duration.ofHours(n);
      default -> Duration.ofDays(n);
    };
  }
}
