package dev.postbox.demo;

import dev.postbox.core.CrashPoints;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.ProcessSupervisor;
import dev.postbox.testkit.ProcessSupervisor.Supervised;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * Runs the relay processes, the inventory process and the payments process on the test kit's {@link
 * ProcessSupervisor} and restarts any that dies. The first relay is armed to halt between the
 * broker's acknowledgement and the mark at the batch given by --crash-at-batch; the first inventory
 * process is armed to halt between an effect's commit and its offset commit at the delivery given
 * by --consumer-crash-at; the first payments process between a charge's commit and its reply
 * ({@link PaymentsPhase}). Halts at a crash point are counted. With the CDC relay ({@code --relay
 * cdc}) one relay streams and the others stand by: the first relay is started alone and the others
 * only once it holds the slot's lease; every relay's first process is armed at {@code
 * cdc.after-ack-before-mark}, once in all ({@link CrashPoints#ONCE_PROPERTY}): whichever streams
 * when its batch count reaches the armed one halts, and no other relay halts after it (one halt, as
 * with polling, even when the first relay lost the slot's lease to a standby under load before its
 * armed batch, which armed alone it then never reached).
 */
final class DemoSupervisor {

  /** Where the children connect to, and where their logs go. */
  record Settings(
      String jdbcUrl,
      String bootstrap, // or the AMQP URI
      String ordersTopic,
      String stockTopic,
      String inventoryGroup,
      int relays,
      int crashAtBatch,
      int consumerCrashAt,
      Path workDir,
      ShopTransport.Kind transport,
      String paymentsTopic,
      String paymentsGroup,
      RelayMode mode) {}

  /** A supervised process and what its crash point means. */
  private record Member(
      Supervised process,
      boolean relay,
      String crash, // what a halt at its crash point means
      AtomicInteger crashes) {}

  private final Settings settings;
  private final PrintStream out;
  private final DemoMetrics metrics;
  private final AtomicInteger relayCrashes = new AtomicInteger();
  private final AtomicInteger consumerCrashes = new AtomicInteger();
  private final AtomicInteger paymentsCrashes = new AtomicInteger();
  private final Map<Supervised, Member> members = new ConcurrentHashMap<>();
  private final List<Member> order = new ArrayList<>(); // in start order
  private final ProcessSupervisor supervisor =
      new ProcessSupervisor(Duration.ofMillis(100), this::exited);

  DemoSupervisor(Settings settings, PrintStream out, DemoMetrics metrics) {
    this.settings = settings;
    this.out = out;
    this.metrics = metrics;
  }

  /** Relay halts at their crash point so far. */
  int relayCrashes() {
    return relayCrashes.get();
  }

  /** Inventory halts at their crash point so far. */
  int consumerCrashes() {
    return consumerCrashes.get();
  }

  /** Payments halts at its crash point so far. */
  int paymentsCrashes() {
    return paymentsCrashes.get();
  }

  /** Starts the relays and the inventory, waits until each started, then supervises them. */
  void start() {
    for (int i = 0; i < settings.relays(); i++) {
      int index = i;
      add(
          relayId(i),
          true,
          settings.mode().cdc()
              ? "cdc.after-ack-before-mark (acked, not marked, slot not confirmed)"
              : "relay.after-ack-before-mark (acked, not marked)",
          relayCrashes,
          c -> relay(index));
    }
    add(
        "inventory",
        false,
        "consumer.after-effect-before-offset-commit (effect committed, offset not)",
        consumerCrashes,
        this::inventory);
    add(
        PAYMENTS,
        false,
        "consumer.after-commit-before-completed (charge committed, reply not sent)",
        paymentsCrashes,
        this::payments);
    // only the first incarnation is armed: the first relay's and the inventory's
    supervisor.armer(c -> c.incarnation() == 1 ? crashPointOf(members.get(c)) : Optional.empty());
    if (settings.mode().cdc() && settings.relays() > 1) {
      Member first = order.get(0);
      supervisor.want(first.process());
      first.process().jvm().orElseThrow().awaitLogLine("started", Duration.ofSeconds(60));
      awaitSlotOwner(relayId(0), Duration.ofSeconds(60));
    }
    for (Member m : order) {
      supervisor.want(m.process());
    }
    for (Member m : order) {
      m.process().jvm().orElseThrow().awaitLogLine("started", Duration.ofSeconds(60));
    }
    supervisor.startWatching();
  }

  private void add(
      String name,
      boolean relay,
      String crash,
      AtomicInteger crashes,
      Function<Supervised, ChildJvm.Builder> launcher) {
    Member m = new Member(supervisor.add(name, launcher::apply), relay, crash, crashes);
    members.put(m.process(), m);
    order.add(m);
  }

  private Optional<String> crashPointOf(Member m) {
    if (m.process().name().equals(PAYMENTS)) {
      return Optional.of(
          CrashPoints.CONSUMER_AFTER_COMMIT_BEFORE_COMPLETED + "@" + PaymentsPhase.CRASH_AT);
    }
    if (m.relay() && settings.mode().cdc()) {
      // every relay's first process, once in all (relayProcess: CrashPoints.ONCE_PROPERTY): the
      // streaming one may lose the slot's lease to a standby before its armed batch
      return settings.crashAtBatch() > 0
          ? Optional.of("cdc.after-ack-before-mark@" + settings.crashAtBatch())
          : Optional.empty();
    }
    if (m.relay()) {
      return m.process().name().equals(relayId(0)) && settings.crashAtBatch() > 0
          ? Optional.of("relay.after-ack-before-mark@" + settings.crashAtBatch())
          : Optional.empty();
    }
    return settings.consumerCrashAt() > 0
        ? Optional.of("consumer.after-effect-before-offset-commit@" + settings.consumerCrashAt())
        : Optional.empty();
  }

  private static final String PAYMENTS = "payments";

  private ChildJvm.Builder payments(Supervised c) {
    return ChildJvm.builder(PaymentsProcess.class)
        .args(
            settings.jdbcUrl(),
            settings.bootstrap(),
            settings.paymentsTopic(),
            settings.paymentsGroup(),
            Integer.toString(c.incarnation()),
            settings.transport().id())
        .jvmOptions(
            "-Xmx192m",
            "--enable-native-access=ALL-UNNAMED",
            "-Dorg.slf4j.simpleLogger.log.dev.postbox=debug")
        .log(settings.workDir().resolve("payments.log"));
  }

  /**
   * Waits until {@code owner} holds the CDC slot's lease ({@code postbox_cdc_slot}), so the relays
   * started after it stand by. The demo's own wait on real time: it watches real processes.
   */
  private void awaitSlotOwner(String owner, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    try (java.sql.Connection c = java.sql.DriverManager.getConnection(settings.jdbcUrl());
        java.sql.PreparedStatement ps =
            c.prepareStatement(
                "SELECT 1 FROM postbox_cdc_slot WHERE owner = ? AND lease_until > now()")) {
      ps.setString(1, owner);
      while (true) {
        try (java.sql.ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            return;
          }
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              owner + " did not take the CDC slot's lease within " + timeout);
        }
        Thread.sleep(100);
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException("cannot read the CDC slot's lease: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for the CDC slot's lease", e);
    }
  }

  private static String relayId(int i) {
    return "relay-" + (char) ('a' + i);
  }

  private ChildJvm.Builder relay(int i) {
    String id = relayId(i);
    return ChildJvm.builder(RelayProcess.class)
        .args(
            settings.jdbcUrl(),
            settings.bootstrap(),
            id,
            "3000",
            "--duplicate-publish=" + ShopEvents.ORDER_CREATED,
            "--transport=" + settings.transport().id(),
            "--relay=" + settings.mode().relay(),
            "--outbox=" + settings.mode().outbox())
        .jvmOptions(
            "-Xmx256m",
            "--enable-native-access=ALL-UNNAMED",
            "-Dorg.slf4j.simpleLogger.log.dev.postbox=debug")
        .systemProperty(MetricsEndpoint.PORT_PROPERTY, Integer.toString(metrics.portFor(id)))
        .systemProperty(
            CrashPoints.ONCE_PROPERTY, settings.workDir().resolve("relay-crash.once").toString())
        .log(settings.workDir().resolve(id + ".log"));
  }

  private ChildJvm.Builder inventory(Supervised c) {
    return ChildJvm.builder(InventoryProcess.class)
        .args(
            settings.jdbcUrl(),
            settings.bootstrap(),
            settings.ordersTopic(),
            settings.stockTopic(),
            settings.inventoryGroup(),
            Integer.toString(c.incarnation()),
            settings.transport().id())
        .jvmOptions(
            "-Xmx256m",
            "--enable-native-access=ALL-UNNAMED",
            "-Dorg.slf4j.simpleLogger.log.dev.postbox=debug")
        .systemProperty(
            MetricsEndpoint.PORT_PROPERTY, Integer.toString(metrics.portFor("inventory")))
        .log(settings.workDir().resolve("inventory.log"));
  }

  /** A child died by itself (it is restarted, unarmed, right after this). */
  private void exited(Supervised c, ChildJvm jvm) {
    if (!c.expectedDeath().isEmpty()) {
      return;
    }
    Member m = members.get(c);
    int code = jvm.exitCode().orElse(-1);
    if (code == CrashPoints.EXIT_CODE) {
      m.crashes().incrementAndGet();
      out.printf("%s halted at crash point %s; restarting%n", c.name(), m.crash());
    } else {
      out.printf("%s exited with %d; restarting (log: %s)%n", c.name(), code, jvm.log());
    }
  }

  /** Stops the inventory first (so that it commits its offsets), then the relays. */
  void stop() throws InterruptedException {
    List<Supervised> stopOrder =
        new ArrayList<>(order.stream().filter(m -> !m.relay()).map(Member::process).toList());
    stopOrder.addAll(order.stream().filter(Member::relay).map(Member::process).toList());
    supervisor.stopAll(stopOrder, "end of demo", Duration.ofSeconds(20));
  }
}
