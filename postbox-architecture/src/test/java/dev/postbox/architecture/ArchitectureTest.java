package dev.postbox.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The tiers, checked against the main classes of every module (issue 14, items 3 and 4). A failure
 * names each offending dependency or call with its source line. {@link RulesCatchViolationsTest}
 * shows each rule failing on a class written to break it.
 */
class ArchitectureTest {

  private static JavaClasses all() {
    return Modules.allMainClasses();
  }

  @Test
  void eachModuleKeepsToItsOwnPackageRoot() {
    // The rules name modules by package root; this keeps that honest: a class that a module ships
    // outside its
    // root (or a split package between two modules) fails here.
    for (Modules module : Modules.values()) {
      JavaClasses classes = Modules.classesOf(module);
      assertThat(classes).as(module.artifact + " has main classes").isNotEmpty();
      Set<String> outside =
          classes.stream()
              .filter(c -> Modules.owning(c).orElse(null) != module)
              .map(JavaClass::getName)
              .collect(Collectors.toCollection(TreeSet::new));
      assertThat(outside).as(module.artifact + " classes outside " + module.packageRoot).isEmpty();
    }
  }

  @Test
  void coreNamesNoDriverOrTransport() {
    ArchitectureRules.CORE_NAMES_NO_DRIVER_OR_TRANSPORT.check(all());
  }

  @Test
  void coreNamesNoTransportInItsStrings() {
    // "core names no transport" beyond types: a string constant such as a Kafka class name or
    // messaging.system=kafka. The declared list is exact: a class that stops naming a transport
    // must leave it.
    Map<String, Set<String>> naming = new TreeMap<>();
    for (JavaClass c : Modules.classesOf(Modules.CORE)) {
      Set<String> names = ArchitectureRules.transportNamesIn(c);
      if (!names.isEmpty()) {
        naming
            .computeIfAbsent(ArchitectureRules.topLevelName(c), k -> new TreeSet<>())
            .addAll(names);
      }
    }
    assertThat(naming.keySet())
        .as("core classes naming a transport in a string: %s", naming)
        .containsExactlyInAnyOrderElementsOf(
            ArchitectureRules.CORE_TRANSPORT_NAMES_BY_DESIGN.keySet());
  }

  @Test
  void coreDependsOnNoOtherModule() {
    ArchitectureRules.CORE_DEPENDS_ON_NO_OTHER_MODULE.check(all());
  }

  @TestFactory
  Iterable<DynamicTest> adaptersAndIntegrationsDependOnCoreOnly() {
    return ArchitectureRules.modulesHeldToCoreOnly().stream()
        .map(m ->
            DynamicTest.dynamicTest(
                m.artifact, () -> ArchitectureRules.libraryModuleDependsOnCoreOnly(m).check(all())))
        .toList();
  }

  @Test
  void theOperationsApiDependsOnCoreAndJdbcOnly() {
    ArchitectureRules.ADMIN_DEPENDS_ON_CORE_AND_JDBC_ONLY.check(all());
  }

  @Test
  void productionCodeDoesNotUseTheTestKit() {
    ArchitectureRules.PRODUCTION_CODE_DOES_NOT_USE_THE_TEST_KIT.check(all());
  }

  @Test
  void declaredTestKitUsersAreFrontEndsThatStillUseIt() {
    // The exception list may only shrink: a class that no longer uses the test kit (or is gone)
    // must leave it,
    // and no library module may ever be on it.
    Set<String> users = topLevelClassesDependingOn(Modules.TESTKIT);
    for (String declared : ArchitectureRules.TEST_KIT_USERS_BY_DESIGN.keySet()) {
      Modules module =
          Modules.owning(declared.substring(0, declared.lastIndexOf('.'))).orElseThrow();
      assertThat(module.tier).as(declared + " is in a front end").isEqualTo(Modules.Tier.FRONT_END);
      assertThat(users)
          .as("declared test kit user " + declared + " still uses it")
          .contains(declared);
    }
  }

  @Test
  void internalPackagesStayInTheirModule() {
    ArchitectureRules.INTERNAL_STAYS_IN_ITS_MODULE.check(all());
  }

  @Test
  void theKafkaAdapterDrivesTheEngineThroughItsPackage() {
    // The contract is real: the Kafka adapter uses the engine package, and no adapter reaches into
    // the relay engine (checked by INTERNAL_STAYS_IN_ITS_MODULE above).
    Set<String> used =
        all().stream()
            .filter(c -> Modules.owning(c).filter(m -> m == Modules.KAFKA).isPresent())
            .flatMap(c -> c.getDirectDependenciesFromSelf().stream())
            .map(d -> d.getTargetClass().getPackageName())
            .filter(n -> n.equals(ArchitectureRules.ENGINE_PACKAGE))
            .collect(Collectors.toCollection(TreeSet::new));
    assertThat(used).containsExactly(ArchitectureRules.ENGINE_PACKAGE);
  }

  @Test
  void everyMainPackageHasAPackageInfo() throws IOException {
    // Read from the sources (javac writes no package-info.class for a package without annotations).
    // Surefire runs
    // in postbox-architecture/, so the other modules are next door.
    Path root = Path.of("..").toAbsolutePath().normalize();
    Set<String> missing = new TreeSet<>();
    for (Modules module : Modules.values()) {
      Path sources = root.resolve(module.artifact).resolve("src/main/java");
      assertThat(sources).as(module.artifact + " sources").isDirectory();
      try (Stream<Path> files = Files.walk(sources)) {
        files
            .filter(f -> f.getFileName().toString().endsWith(".java"))
            .map(Path::getParent)
            .distinct()
            .filter(dir -> !Files.exists(dir.resolve("package-info.java")))
            .forEach(dir -> missing.add(root.relativize(dir).toString()));
      }
    }
    assertThat(missing).as("main packages without a package-info.java").isEmpty();
  }

  @Test
  void noRawTimeInLibraryCode() {
    ArchitectureRules.NO_RAW_TIME_IN_LIBRARY_CODE.check(all());
  }

  /** Top-level classes of other modules that depend on this module. */
  private static Set<String> topLevelClassesDependingOn(Modules module) {
    return all().stream()
        .filter(c -> Modules.owning(c).orElse(null) != module)
        .filter(c ->
            c.getDirectDependenciesFromSelf().stream()
                .anyMatch(d -> Modules.owning(d.getTargetClass()).orElse(null) == module))
        .map(ArchitectureRules::topLevelName)
        .collect(Collectors.toCollection(TreeSet::new));
  }
}
