package dev.agentsandbox.cli;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.AuditRow;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A run's audit rows are written and read only through their event types (docs/architecture.md,
 * "Rules the layout keeps"). The classes of every module are imported (this module depends on all
 * of them) and the main sources of every module are read from the reactor's folders: a row type or
 * a row's data built or read anywhere else fails here, naming the place.
 */
class RunEventVocabularyTest {
  /** The one writer of a run's rows. */
  private static final String RUN_TRAIL = "dev.agentsandbox.runs.audit.RunTrail";

  /**
   * Writers of rows that are not run events, each for a reason: configuration changes and their
   * refusals (written with the change, in its transaction). The store writes its own rows (tokens,
   * `TokenAudit`) and is left out of the rule as a package.
   */
  private static final Set<String> OTHER_WRITERS =
      Set.of("dev.agentsandbox.server.governance.GovernedConfigs");

  /** The one reader of a stored row's data. */
  private static final String RECORDED_EVENT = "dev.agentsandbox.runs.audit.RecordedEvent";

  /** Where a JSON row's {@code data} may be taken or put: the row reader and the documents. */
  private static final Set<String> DATA_ACCESSORS =
      Set.of(
          "runs/src/main/java/dev/agentsandbox/runs/audit/RecordedEvent.java",
          "runs/src/main/java/dev/agentsandbox/runs/audit/RunTimeline.java",
          "store/src/main/java/dev/agentsandbox/store/AuditLog.java");

  private static final Pattern LITERAL = Pattern.compile("\"(agent_sandbox\\.[a-z_.]+)\"");
  private static final Pattern DATA_ACCESS =
      Pattern.compile("\\b(path|get|has|set|put|remove|with)\\(\\s*\"data\"");

  private static JavaClasses classes;
  private static Path root;

  @BeforeAll
  static void importEverything() {
    classes =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.agentsandbox");
    root = Path.of("..").toAbsolutePath().normalize();
    assertThat(root.resolve("pom.xml")).as("the reactor's root, from the cli module").exists();
  }

  @Test
  void onlyTheRunTrailBuildsARunsAuditRow() {
    noClasses()
        .that(
            DescribedPredicate.describe(
                "are neither RunTrail nor a writer of rows that are not run events",
                (JavaClass c) ->
                    !c.getName().equals(RUN_TRAIL)
                        && !OTHER_WRITERS.contains(c.getName())
                        && !c.getPackageName().startsWith("dev.agentsandbox.store")))
        .should()
        .callConstructorWhere(
            DescribedPredicate.describe(
                "an AuditEvent is built",
                access -> access.getTarget().getOwner().isEquivalentTo(AuditEvent.class)))
        .because("a run's row type and data come from its RunEvent (policy.event)")
        .check(classes);
  }

  @Test
  void onlyRecordedEventReadsAStoredRowsData() {
    noClasses()
        .that(
            DescribedPredicate.describe(
                "are neither RecordedEvent nor the store",
                (JavaClass c) ->
                    !c.getName().equals(RECORDED_EVENT)
                        && !c.getPackageName().startsWith("dev.agentsandbox.store")))
        .should()
        .callMethod(AuditRow.class, "data")
        .because("a row's data is read as its RunEvent, through RecordedEvent")
        .check(classes);
  }

  @Test
  void noMainSourceNamesARunEventsRowTypeOutsideTheVocabulary() throws IOException {
    List<String> found = new ArrayList<>();
    for (Path source : mainSources()) {
      String relative = root.relativize(source).toString();
      if (relative.startsWith("policy/src/main/java/dev/agentsandbox/policy/event/")) {
        continue;
      }
      Matcher m = LITERAL.matcher(Files.readString(source));
      while (m.find()) {
        if (isRunEventTypeOrGroup(m.group(1))) {
          found.add(relative + ": \"" + m.group(1) + "\"");
        }
      }
    }
    assertThat(found).as("row types of run events written as strings (use EventType)").isEmpty();
  }

  @Test
  void noMainSourceTakesARowsDataButTheRowReaderAndTheDocuments() throws IOException {
    List<String> found = new ArrayList<>();
    for (Path source : mainSources()) {
      String relative = root.relativize(source).toString();
      if (DATA_ACCESSORS.contains(relative)) {
        continue;
      }
      Matcher m = DATA_ACCESS.matcher(Files.readString(source));
      while (m.find()) {
        found.add(relative + ": " + m.group());
      }
    }
    assertThat(found)
        .as("a row's data read by field name (read it with RecordedEvent or RunTimeline)")
        .isEmpty();
  }

  @Test
  void theRulesSeeTheWholeReactor() throws IOException {
    // A rule that reads nothing proves nothing: every module's sources and classes are there.
    Set<String> modules =
        mainSources().stream()
            .map(p -> root.relativize(p).getName(0).toString())
            .collect(Collectors.toSet());
    assertThat(modules).contains("policy", "proxy", "store", "runs", "server", "cli");
    assertThat(classes.contain(RUN_TRAIL)).isTrue();
    assertThat(classes.contain("dev.agentsandbox.server.run.TimelineEndpoints")).isTrue();
  }

  /**
   * A run event's row type, or the prefix a group of them shares ({@code agent_sandbox.egress}).
   */
  static boolean isRunEventTypeOrGroup(String literal) {
    return Arrays.stream(EventType.values())
        .map(EventType::wireName)
        .anyMatch(type -> type.equals(literal) || type.startsWith(literal + "."));
  }

  private static List<Path> mainSources() throws IOException {
    List<Path> sources = new ArrayList<>();
    try (Stream<Path> modules = Files.list(root)) {
      for (Path module : modules.filter(Files::isDirectory).toList()) {
        Path main = module.resolve("src/main/java");
        if (Files.isDirectory(main)) {
          try (Stream<Path> files = Files.walk(main)) {
            files.filter(p -> p.toString().endsWith(".java")).forEach(sources::add);
          }
        }
      }
    }
    return sources;
  }
}
