package dev.postbox.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.AccessTarget;
import com.tngtech.archunit.core.domain.AccessTarget.CodeUnitAccessTarget;
import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaAccess;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import dev.postbox.architecture.Modules.Tier;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The tiers of ARCHITECTURE (issue 14, item 4) and the raw-time check (item 3), as ArchUnit rules.
 * Each rule is a constant so that {@link ArchitectureTest} checks it against every module's main
 * classes and {@link RulesCatchViolationsTest} shows the very same rule failing on a class written
 * to break it.
 *
 * <p>Package roots stand for modules ({@code dev.postbox.core..} is postbox-core and so on); {@link
 * ArchitectureTest#eachModuleKeepsToItsOwnPackageRoot()} checks that this holds.
 */
final class ArchitectureRules {
  private ArchitectureRules() {}

  /** Packages of JDBC drivers, transports and Redis clients: core names none of them. */
  static final List<String> DRIVER_AND_TRANSPORT_PACKAGES =
      List.of(
          "org.postgresql..", // the PostgreSQL JDBC driver (java.sql interfaces are fine)
          "org.apache.kafka..", // Kafka clients
          "com.rabbitmq..", // RabbitMQ Java client
          "org.springframework.amqp..", // Spring AMQP (RabbitMQ)
          "io.lettuce..", // Lettuce (Redis)
          "redis.clients..", // Jedis (Redis)
          "org.redisson.."); // Redisson (Redis)

  static final ArchRule CORE_NAMES_NO_DRIVER_OR_TRANSPORT =
      noClasses()
          .that()
          .resideInAPackage(Modules.CORE.packages())
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage(DRIVER_AND_TRANSPORT_PACKAGES.toArray(String[]::new))
          .as("postbox-core depends on no JDBC driver, Kafka, RabbitMQ or Redis client type")
          .because(
              "core is what every user needs: a transport or store lives in its own adapter module");

  static final ArchRule CORE_DEPENDS_ON_NO_OTHER_MODULE =
      noClasses()
          .that()
          .resideInAPackage(Modules.CORE.packages())
          .should()
          .dependOnClassesThat(postboxModuleOtherThan(Modules.CORE))
          .as("postbox-core depends on no other Postbox module")
          .because("arrows point down: adapters and front ends depend on core, never the reverse");

  /**
   * Adapters (jdbc, kafka, redis) and integrations (micrometer) depend on core and on nothing else
   * of Postbox: in particular never on each other. The application wires a store and a transport
   * together.
   */
  static ArchRule libraryModuleDependsOnCoreOnly(Modules module) {
    return noClasses()
        .that()
        .resideInAPackage(module.packages())
        .should()
        .dependOnClassesThat(postboxModuleOtherThan(Modules.CORE, module))
        .as(module.artifact + " depends on no Postbox module but postbox-core")
        .because(
            "adapters never depend on each other; the application (or a starter) wires a store and a"
                + " transport together");
  }

  /**
   * The operations API (postbox-admin) reads and changes the tables through postbox-jdbc and names
   * no transport adapter: the CLI and the console wire a decoder and a lag source in.
   */
  static final ArchRule ADMIN_DEPENDS_ON_CORE_AND_JDBC_ONLY =
      noClasses()
          .that()
          .resideInAPackage(Modules.ADMIN.packages())
          .should()
          .dependOnClassesThat(postboxModuleOtherThan(Modules.CORE, Modules.JDBC, Modules.ADMIN))
          .as("postbox-admin depends on no Postbox module but postbox-core and postbox-jdbc")
          .because(
              "the operations API is shared by every front end and names no transport; front ends"
                  + " supply the transport's decoder and lag probe");

  /**
   * Production classes that use the test kit today, each with its reason. They are all in the front
   * ends (demo, verify, bench), which are programs that start their own embedded PostgreSQL, Kafka
   * broker or redis-server and child JVMs; no library module is among them. The process supervisor
   * (restart-on-death) is the test kit's ProcessSupervisor, used by the demo and verify; the
   * operator commands (migrate, trace) are in postbox-cli, which must not appear here. A new
   * production use of the test kit fails until it is added here with its reason.
   */
  static final Map<String, String> TEST_KIT_USERS_BY_DESIGN =
      Map.ofEntries(
          Map.entry(
              "dev.postbox.demo.ShopDemo",
              "the demo runs on an embedded PostgreSQL and Kafka broker (PostgresServer, KafkaBroker)"
                  + " and checks the run against a DeliveryHistory"),
          Map.entry(
              "dev.postbox.demo.DemoSupervisor",
              "the demo's relay and inventory processes: ChildJvm under the test kit's"
                  + " ProcessSupervisor, halted at crash points and restarted"),
          Map.entry(
              "dev.postbox.verify.TransformScenario",
              "the transform scenario starts PostgreSQL and a Kafka broker (PostgresServer,"
                  + " KafkaBroker) and its transformers as ChildJvm under the test kit's"
                  + " ProcessSupervisor, halted at a crash point, killed -9 and restarted"),
          Map.entry(
              "dev.postbox.demo.OrderLoad",
              "the demo's orders are recorded as committed in the DeliveryHistory"),
          Map.entry(
              "dev.postbox.demo.ShopObserver",
              "the demo's observer checks what it consumed against the DeliveryHistory"),
          Map.entry(
              "dev.postbox.verify.CampaignEnvironment",
              "the fault-injection campaign starts the infrastructure it injects faults into"
                  + " (PostgresServer, KafkaBroker)"),
          Map.entry(
              "dev.postbox.verify.BrokerFaults",
              "the campaign's broker fault kills and restarts the Kafka broker (KafkaBroker)"),
          Map.entry(
              "dev.postbox.verify.FailoverPair",
              "the campaign's PostgreSQL pair (PostgresPair): started, failed over and rejoined on"
                  + " purpose, by both transports' campaigns and the request-reply scenario"),
          Map.entry(
              "dev.postbox.verify.DatabaseFaults",
              "the campaign's database faults restart, crash and terminate PostgreSQL (PostgresServer)"),
          Map.entry(
              "dev.postbox.verify.Fleet",
              "verify's process fleet: producers, relays and consumers as ChildJvm under the test kit's"
                  + " ProcessSupervisor, killed and restarted on purpose"),
          Map.entry(
              "dev.postbox.verify.RedisWindow",
              "the redis-window scenario runs a private redis-server (RedisServer) and child consumers"),
          Map.entry(
              "dev.postbox.verify.RequestReplyScenario",
              "the request-reply scenario starts PostgreSQL and a Kafka broker or a RabbitMQ node"
                  + " (PostgresServer, KafkaBroker, RabbitMqServer) and its requester and responder as ChildJvm under the test kit's"
                  + " ProcessSupervisor, halted at crash points and restarted"),
          Map.entry(
              "dev.postbox.bench.internal.BenchEnv",
              "the benchmark environment: embedded PostgreSQL and Kafka broker, measured like for like"),
          Map.entry(
              "dev.postbox.bench.internal.ClusterBench",
              "the cluster benchmark starts the test kit's three-broker Kafka cluster"
                  + " (KafkaCluster) beside the single broker"),
          Map.entry(
              "dev.postbox.bench.internal.DebeziumPeer",
              "the Debezium peer runs in its own ChildJvm (it needs other Kafka client jars)"),
          Map.entry(
              "dev.postbox.bench.internal.CdcLatencyBench",
              "the CDC latency race runs Debezium in its own ChildJvm (DebeziumPeer) and stops it"
                  + " between phases"),
          Map.entry(
              "dev.postbox.bench.internal.E2eDebeziumSpringPipeline",
              "the end-to-end race runs Debezium in its own ChildJvm (DebeziumPeer) and stops it"
                  + " after its pipeline's runs"),
          Map.entry(
              "dev.postbox.bench.internal.HeapBench",
              "the heap benchmark measures a relay in a ChildJvm with a fixed heap"),
          Map.entry(
              "dev.postbox.bench.internal.RedisBench",
              "the Redis benchmark runs a private redis-server (RedisServer)"),
          Map.entry(
              "dev.postbox.bench.internal.RabbitBench",
              "the RabbitMQ benchmark runs a private RabbitMQ node (RabbitMqServer)"),
          Map.entry(
              "dev.postbox.bench.internal.RabbitNode",
              "the RabbitMQ benchmarks take this machine's RabbitMQ: a private node or the external"
                  + " broker the environment names (RabbitMqServer)"),
          Map.entry(
              "dev.postbox.bench.internal.E2eRabbit",
              "the end-to-end race's RabbitMQ pipelines run a private RabbitMQ node for each of"
                  + " their runs (RabbitMqServer, through RabbitNode)"),
          Map.entry(
              "dev.postbox.bench.internal.RabbitHandover",
              "the shard hand-over benchmark kills a leased instance in its own ChildJvm, given the"
                  + " embedded PostgreSQL's address (PostgresServer)"),
          Map.entry(
              "dev.postbox.bench.internal.CapacityBench",
              "the capacity benchmark reads WAL positions, table sizes and dead tuples on the"
                  + " embedded PostgreSQL (PostgresServer)"),
          Map.entry(
              "dev.postbox.verify.KafkaClusterFaults",
              "the Kafka campaign's --cluster kills, freezes and restarts the brokers of the test"
                  + " kit's three-node cluster (KafkaCluster)"),
          Map.entry(
              "dev.postbox.bench.internal.RrBench",
              "the request/reply benchmark's RabbitMQ part runs a private RabbitMQ node"
                  + " (RabbitMqServer)"),
          Map.entry(
              "dev.postbox.demo.KafkaShopTransport",
              "the demo on Kafka: the test kit's Kafka broker (KafkaBroker), or with --cluster its"
                  + " three-broker cluster (KafkaCluster)"),
          Map.entry(
              "dev.postbox.demo.DemoInfrastructure",
              "the demo's infrastructure: the shared PostgreSQL and broker (PostboxInfrastructure,"
                  + " PostgresServer), or with --cluster a three-broker cluster and a PostgreSQL"
                  + " pair (KafkaCluster, PostgresPair)"),
          Map.entry(
              "dev.postbox.demo.ClusterFaults",
              "./postbox demo --cluster kills and restarts a partition leader (KafkaCluster) and"
                  + " fails the database over (PostgresPair)"),
          Map.entry(
              "dev.postbox.demo.RabbitShopTransport",
              "the demo on RabbitMQ: a private RabbitMQ node (RabbitMqServer)"),
          Map.entry(
              "dev.postbox.console.DemoDatabase",
              "./postbox console --demo runs the console on an embedded PostgreSQL (PostgresServer)"),
          Map.entry(
              "dev.postbox.verify.RabbitCampaign",
              "the RabbitMQ campaign looks for this machine's RabbitMQ and may be given a test's"
                  + " node (RabbitMqServer)"),
          Map.entry(
              "dev.postbox.verify.RabbitEnvironment",
              "the RabbitMQ campaign's environment starts PostgreSQL and a RabbitMQ node it"
                  + " restarts (PostgresServer, RabbitMqServer), or a cluster (RabbitCluster)"),
          Map.entry(
              "dev.postbox.verify.RabbitFaults",
              "the RabbitMQ campaign's faults kill and restart its node or a cluster node"
                  + " (RabbitMqServer, RabbitCluster)"),
          Map.entry(
              "dev.postbox.verify.RabbitClusterFaults",
              "the RabbitMQ campaign's --cluster starts a three-node cluster and kills and"
                  + " restarts the node of a quorum leader (RabbitCluster)"),
          Map.entry(
              "dev.postbox.verify.RabbitBrokerFaults",
              "the RabbitMQ campaign's broker faults kill and restart its node and close its"
                  + " connections (RabbitMqServer)"),
          Map.entry(
              "dev.postbox.verify.RabbitPartitions",
              "the RabbitMQ campaign's partitions configure PostgreSQL's listen addresses"
                  + " (PostgresServer.Builder) and launch the partitioned children in network"
                  + " namespaces (ChildJvm.Builder)"));

  static final ArchRule PRODUCTION_CODE_DOES_NOT_USE_THE_TEST_KIT =
      noClasses()
          .that()
          .resideInAPackage("dev.postbox..")
          .and()
          .resideOutsideOfPackage(Modules.TESTKIT.packages())
          .and(notIn("a declared test kit user (a front end)", TEST_KIT_USERS_BY_DESIGN.keySet()))
          .should()
          .dependOnClassesThat()
          .resideInAPackage(Modules.TESTKIT.packages())
          .as(
              "production code never depends on the test kit (except the front-end classes declared in"
                  + " TEST_KIT_USERS_BY_DESIGN)")
          .because("production modules never depend on the test kit");

  /**
   * The consumer engine and its adapter contract: a declared package of core that transport adapter
   * modules (and core) may use, and nothing else. Front ends use the public API.
   */
  static final String ENGINE_PACKAGE = "dev.postbox.core.engine";

  /** The relay engine: used by core's {@code Relay} only; adapters implement the relay SPI. */
  static final String CORE_ONLY_ENGINE_PACKAGE = "dev.postbox.core.engine.relay";

  static final ArchRule INTERNAL_STAYS_IN_ITS_MODULE =
      classes()
          .that()
          .resideInAPackage("dev.postbox..")
          .should(notUseAnotherModulesInternalsOutsideTheEngineContract())
          .as(
              "internal packages are used only inside their own module; core's engine package only by"
                  + " core and adapters; the relay engine only by core")
          .because(
              "internal is not API: a module that needs another's internals needs a declared contract");

  /**
   * A method that reads the system's clocks or sleeps: what the time package (Clock, Ticker,
   * Sleeper) wraps.
   */
  record ForbiddenTimeCall(String owner, String name, List<String> parameterTypes) {
    boolean matches(AccessTarget target) {
      if (!(target instanceof CodeUnitAccessTarget codeUnit)) {
        return false;
      }
      return target.getOwner().getName().equals(owner)
          && target.getName().equals(name)
          && (parameterTypes == null
              || codeUnit.getRawParameterTypes().stream()
                  .map(JavaClass::getName)
                  .toList()
                  .equals(parameterTypes));
    }
  }

  static final List<ForbiddenTimeCall> FORBIDDEN_TIME_CALLS =
      List.of(
          new ForbiddenTimeCall("java.lang.Thread", "sleep", null), // every overload
          new ForbiddenTimeCall("java.util.concurrent.TimeUnit", "sleep", null),
          new ForbiddenTimeCall("java.lang.System", "nanoTime", List.of()),
          new ForbiddenTimeCall("java.lang.System", "currentTimeMillis", List.of()),
          new ForbiddenTimeCall(
              "java.time.Instant", "now", List.of())); // Instant.now(clock) is fine

  /**
   * Library main code (core, adapters, micrometer) reads time and sleeps through injected Clock,
   * Ticker and Sleeper, never directly, except inside a time package. Checked strictly: the last
   * raw-time calls left library code in issue 14 (the frozen store that tolerated them while they
   * were removed is gone).
   */
  static final ArchRule NO_RAW_TIME_IN_LIBRARY_CODE =
      classes()
          .that()
          .resideInAnyPackage(libraryPackages())
          .and()
          .resideOutsideOfPackage("..time..")
          .should(notReadTheSystemClockOrSleep())
          .as(
              "library code (core, jdbc, kafka, redis, micrometer) outside a time package calls no"
                  + " Thread.sleep, TimeUnit.sleep, System.nanoTime, System.currentTimeMillis or"
                  + " Instant.now()")
          .because(
              "time is injected (Clock, Ticker, Sleeper) so that tests can run on fake time"
                  + " (issue 14, item 3)");

  /**
   * Transport names in core's class files: a string constant naming a transport's package, or a
   * bare {@code "kafka"}, {@code "rabbitmq"} or {@code "redis"} constant. Bytecode dependencies
   * cannot see these, so they are read from the constant pool.
   */
  static final List<String> TRANSPORT_NAME_FRAGMENTS =
      List.of(
          "org.apache.kafka",
          "org/apache/kafka",
          "com.rabbitmq",
          "com/rabbitmq",
          "org.postgresql",
          "org/postgresql",
          "io.lettuce",
          "io/lettuce");

  static final List<String> TRANSPORT_NAME_CONSTANTS = List.of("kafka", "rabbitmq", "redis");

  /**
   * Core classes that name a transport in a string, each with its reason: none. The consumer engine
   * takes the messaging-system name, the span's position attribute and the retriable-error
   * predicate from the adapter's {@code dev.postbox.core.engine.TransportBinding} (issue 14 item
   * 1), so the rule holds with no exception; keep it so.
   */
  static final Map<String, String> CORE_TRANSPORT_NAMES_BY_DESIGN = Map.of();

  /**
   * The transport names in one class file's constant pool (see {@link #TRANSPORT_NAME_FRAGMENTS}).
   */
  static Set<String> transportNamesIn(JavaClass javaClass) {
    byte[] bytes;
    try (java.io.InputStream in =
        javaClass.getSource().orElseThrow().getUri().toURL().openStream()) {
      bytes = in.readAllBytes();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    String latin1 = new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1);
    Set<String> found = new java.util.TreeSet<>();
    for (String fragment : TRANSPORT_NAME_FRAGMENTS) {
      if (latin1.contains(fragment)) {
        found.add(fragment);
      }
    }
    for (String constant : TRANSPORT_NAME_CONSTANTS) {
      // a CONSTANT_Utf8 entry holding exactly this word: tag 1, two length bytes, the bytes
      String entry = "\u0001\u0000" + (char) constant.length() + constant;
      if (latin1.contains(entry)) {
        found.add('"' + constant + '"');
      }
    }
    return found;
  }

  // ---- predicates and conditions ----

  static String[] libraryPackages() {
    return java.util.Arrays.stream(Modules.values())
        .filter(Modules::isLibrary)
        .map(Modules::packages)
        .toArray(String[]::new);
  }

  static List<Modules> modulesHeldToCoreOnly() {
    return java.util.stream.Stream.concat(
            Modules.withTier(Tier.ADAPTER).stream(), Modules.withTier(Tier.INTEGRATION).stream())
        .toList();
  }

  /** The top-level class a (possibly nested or anonymous) class belongs to. */
  static String topLevelName(JavaClass javaClass) {
    String name = javaClass.getName();
    int dollar = name.indexOf('$');
    return dollar < 0 ? name : name.substring(0, dollar);
  }

  private static DescribedPredicate<JavaClass> postboxModuleOtherThan(Modules... allowed) {
    Set<Modules> ok = Set.of(allowed);
    String names = ok.stream().map(m -> m.artifact).sorted().collect(Collectors.joining(", "));
    return DescribedPredicate.describe(
        "belong to a Postbox module other than " + names,
        c -> Modules.owning(c).filter(m -> !ok.contains(m)).isPresent());
  }

  private static DescribedPredicate<JavaClass> notIn(String what, Set<String> topLevelNames) {
    return DescribedPredicate.describe(
        "are not " + what, c -> !topLevelNames.contains(topLevelName(c)));
  }

  private static boolean within(String pkg, String root) {
    return pkg.equals(root) || pkg.startsWith(root + ".");
  }

  private static ArchCondition<JavaClass> notUseAnotherModulesInternalsOutsideTheEngineContract() {
    return new ArchCondition<>("not use another module's internal package") {
      @Override
      public void check(JavaClass origin, ConditionEvents events) {
        Optional<Modules> from = Modules.owning(origin);
        for (Dependency d : origin.getDirectDependenciesFromSelf()) {
          JavaClass target = d.getTargetClass();
          Optional<Modules> to = Modules.owning(target);
          if (to.isEmpty() || to.equals(from)) {
            continue;
          }
          String internal = to.get().packageRoot + ".internal";
          String pkg = target.getPackageName();
          boolean isInternal = within(pkg, internal) || within(pkg, CORE_ONLY_ENGINE_PACKAGE);
          boolean isEngine = !isInternal && within(pkg, ENGINE_PACKAGE);
          if (!isInternal && !isEngine) {
            continue;
          }
          boolean contract = isEngine && from.map(m -> m.tier == Tier.ADAPTER).orElse(false);
          if (!contract) {
            events.add(SimpleConditionEvent.violated(d, d.getDescription()));
          }
        }
      }
    };
  }

  private static ArchCondition<JavaClass> notReadTheSystemClockOrSleep() {
    return new ArchCondition<>("not read the system clock or sleep") {
      @Override
      public void check(JavaClass origin, ConditionEvents events) {
        for (JavaAccess<?> access : origin.getAccessesFromSelf()) {
          if (FORBIDDEN_TIME_CALLS.stream().anyMatch(f -> f.matches(access.getTarget()))) {
            events.add(SimpleConditionEvent.violated(access, access.getDescription()));
          }
        }
      }
    };
  }
}
