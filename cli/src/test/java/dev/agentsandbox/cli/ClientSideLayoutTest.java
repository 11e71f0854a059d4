package dev.agentsandbox.cli;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The command line's client side knows nothing of the server it talks to (docs/architecture.md,
 * "Who composes"): only {@code serve}, which composes a server, uses {@code
 * dev.agentsandbox.server}; what a client shares with the server lives a floor down ({@code
 * policy.governance}, {@code policy.config.Scopes}, {@code runs.json}). And no module's main code
 * but {@code cli}'s {@code serve} builds a backend: {@code server} knows the backend contract
 * alone.
 */
class ClientSideLayoutTest {
  /** The classes of {@code serve}: it starts a server with the backends it made. */
  private static final Set<String> SERVE =
      Set.of("dev.agentsandbox.cli.ServeCommand", "dev.agentsandbox.cli.Backends");

  private static JavaClasses classes;

  @BeforeAll
  static void importMainClasses() {
    classes =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.agentsandbox");
  }

  @Test
  void onlyServeUsesTheServerModule() {
    noClasses()
        .that()
        .resideInAPackage("dev.agentsandbox.cli..")
        .and(
            DescribedPredicate.describe(
                "are not serve's", (JavaClass c) -> !SERVE.contains(outermost(c).getName())))
        .should()
        .dependOnClassesThat()
        .resideInAPackage("dev.agentsandbox.server..")
        .check(classes);
  }

  @Test
  void theServerUsesNoBackendModule() {
    noClasses()
        .that()
        .resideInAPackage("dev.agentsandbox.server..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "dev.agentsandbox.backend.docker..",
            "dev.agentsandbox.backend.k8s..",
            "dev.agentsandbox.backend.microvm..")
        .check(classes);
  }

  /**
   * The drill has its own package (docs/architecture.md, {@code cli.drill}): the command line
   * reaches it through {@code DrillCommand} alone, and it uses nothing of the command line but the
   * admin API's client.
   */
  @Test
  void theDrillIsReachedByItsCommandAndUsesOnlyTheApiClient() {
    noClasses()
        .that()
        .resideInAPackage("dev.agentsandbox.cli")
        .and(
            DescribedPredicate.describe(
                "are not DrillCommand",
                (JavaClass c) ->
                    !outermost(c).getName().equals("dev.agentsandbox.cli.DrillCommand")))
        .should()
        .dependOnClassesThat()
        .resideInAPackage("dev.agentsandbox.cli.drill..")
        .check(classes);
    noClasses()
        .that()
        .resideInAPackage("dev.agentsandbox.cli.drill..")
        .should()
        .dependOnClassesThat(
            DescribedPredicate.describe(
                "are the command line's other than AdminApi",
                (JavaClass c) ->
                    c.getPackageName().equals("dev.agentsandbox.cli")
                        && !outermost(c).getName().equals("dev.agentsandbox.cli.AdminApi")))
        .check(classes);
  }

  private static JavaClass outermost(JavaClass c) {
    JavaClass outer = c;
    while (outer.getEnclosingClass().isPresent()) {
      outer = outer.getEnclosingClass().get();
    }
    return outer;
  }
}
