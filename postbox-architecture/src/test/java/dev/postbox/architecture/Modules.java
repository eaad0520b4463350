package dev.postbox.architecture;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.Location;
import java.net.URISyntaxException;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The Postbox modules whose main classes the rules read, each found through one of its own classes
 * (its jar or its {@code target/classes} on this module's test class path), so the rules see
 * exactly the production classes of each module and nothing from any test source set.
 */
enum Modules {
  CORE("postbox-core", "dev.postbox.core", "dev.postbox.core.Message", Tier.LIBRARY),
  JDBC("postbox-jdbc", "dev.postbox.jdbc", "dev.postbox.jdbc.Outbox", Tier.ADAPTER),
  KAFKA("postbox-kafka", "dev.postbox.kafka", "dev.postbox.kafka.KafkaSubscriber", Tier.ADAPTER),
  REDIS(
      "postbox-redis",
      "dev.postbox.redis",
      "dev.postbox.redis.RedisIdempotencyStore",
      Tier.ADAPTER),
  RABBITMQ(
      "postbox-rabbitmq",
      "dev.postbox.rabbitmq",
      "dev.postbox.rabbitmq.RabbitRelayPublisher",
      Tier.ADAPTER),
  MICROMETER(
      "postbox-micrometer",
      "dev.postbox.micrometer",
      "dev.postbox.micrometer.MicrometerPostboxMetrics",
      Tier.INTEGRATION),
  RESILIENCE4J(
      "postbox-resilience4j",
      "dev.postbox.resilience4j",
      "dev.postbox.resilience4j.Resilience4jGuardProvider",
      Tier.INTEGRATION),
  TESTKIT(
      "postbox-testkit",
      "dev.postbox.testkit",
      "dev.postbox.testkit.PostboxExtension",
      Tier.TEST_KIT),
  SPRING_BOOT_STARTER(
      "postbox-spring-boot-starter",
      "dev.postbox.spring",
      "dev.postbox.spring.PostboxAutoConfiguration",
      Tier.STARTER),
  ADMIN("postbox-admin", "dev.postbox.admin", "dev.postbox.admin.PostboxAdmin", Tier.OPERATIONS),
  CLI("postbox-cli", "dev.postbox.cli", "dev.postbox.cli.OperatorCli", Tier.FRONT_END),
  CONSOLE(
      "postbox-console",
      "dev.postbox.console",
      "dev.postbox.console.ConsoleApplication",
      Tier.FRONT_END),
  DEMO("postbox-demo", "dev.postbox.demo", "dev.postbox.demo.PostboxCli", Tier.FRONT_END),
  VERIFY("postbox-verify", "dev.postbox.verify", "dev.postbox.verify.VerifyCli", Tier.FRONT_END),
  BENCH("postbox-bench", "dev.postbox.bench", "dev.postbox.bench.BenchCli", Tier.FRONT_END);

  /** What a module is for, which decides the rules it is held to. */
  enum Tier {
    /** postbox-core: what every user needs, naming no driver and no transport. */
    LIBRARY,
    /** A store or transport adapter on core; adapters never depend on each other. */
    ADAPTER,
    /** An optional integration on core (metrics, circuit breakers); depends on core only. */
    INTEGRATION,
    /**
     * A framework starter (Spring Boot): library code on the application's class path that wires
     * core, a store and a transport together; never the test kit.
     */
    STARTER,
    /**
     * postbox-admin, the operations API the CLI and the console share: library code on core and
     * postbox-jdbc only (no transport; the front end supplies the decoder and the lag source).
     */
    OPERATIONS,
    /** The test kit: infrastructure for tests and the harnesses. */
    TEST_KIT,
    /** cli, console, demo, verify, bench: programs on the library, not libraries themselves. */
    FRONT_END
  }

  final String artifact;
  final String packageRoot;
  private final String anchorClass;
  final Tier tier;

  Modules(String artifact, String packageRoot, String anchorClass, Tier tier) {
    this.artifact = artifact;
    this.packageRoot = packageRoot;
    this.anchorClass = anchorClass;
    this.tier = tier;
  }

  /** {@code dev.postbox.core..} and the like: this module's packages, in ArchUnit's notation. */
  String packages() {
    return packageRoot + "..";
  }

  /** {@code dev.postbox.core.internal..}: this module's internal packages. */
  String internalPackages() {
    return packageRoot + ".internal..";
  }

  /**
   * Library main code: everything a user puts on a production class path (core, adapters,
   * integrations, starters).
   */
  boolean isLibrary() {
    return tier == Tier.LIBRARY
        || tier == Tier.ADAPTER
        || tier == Tier.INTEGRATION
        || tier == Tier.STARTER
        || tier == Tier.OPERATIONS;
  }

  static List<Modules> withTier(Tier tier) {
    return Arrays.stream(values()).filter(m -> m.tier == tier).toList();
  }

  static String[] packagesOf(List<Modules> modules) {
    return modules.stream().map(Modules::packages).toArray(String[]::new);
  }

  /**
   * The module whose package root holds this class, if any (a JDK or third-party class has none).
   */
  static Optional<Modules> owning(JavaClass javaClass) {
    return owning(javaClass.getPackageName());
  }

  static Optional<Modules> owning(String packageName) {
    return Arrays.stream(values())
        .filter(
            m -> packageName.equals(m.packageRoot) || packageName.startsWith(m.packageRoot + "."))
        .findFirst();
  }

  /** Where this module's main classes are on the test class path: a jar or a classes directory. */
  Location location() {
    try {
      Class<?> anchor = Class.forName(anchorClass, false, Modules.class.getClassLoader());
      return Location.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (ClassNotFoundException | URISyntaxException e) {
      throw new IllegalStateException(
          artifact
              + " is not on the test class path of postbox-architecture (its pom must list it)",
          e);
    }
  }

  private static final Map<Modules, JavaClasses> BY_MODULE = new EnumMap<>(Modules.class);
  private static JavaClasses all;

  /** The main classes of one module. */
  static synchronized JavaClasses classesOf(Modules module) {
    return BY_MODULE.computeIfAbsent(
        module, m -> new ClassFileImporter().importLocations(List.of(m.location())));
  }

  /** The main classes of every module, imported once per test JVM. */
  static synchronized JavaClasses allMainClasses() {
    if (all == null) {
      all =
          new ClassFileImporter()
              .importLocations(Arrays.stream(values()).map(Modules::location).toList());
    }
    return all;
  }
}
