package dev.postbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.cli.TraceOutput;
import dev.postbox.jdbc.MessageTrace;
import dev.postbox.jdbc.MessageTracer;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.DeliveryHistory;
import dev.postbox.testkit.PostgresServer;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The seed lesson's shop on embedded infrastructure: an orders service places orders (order row +
 * {@code order.created} in the outbox, one transaction) while two relay processes publish them; a
 * consumer reads the topic. One relay is killed between the broker's acknowledgement and the mark;
 * a supervisor restarts it. The report checks that nothing is missing and per-key order held.
 *
 * <p>The inventory service ({@link InventoryProcess}, its own process) consumes {@code
 * order.created} with {@code EFFECTIVELY_ONCE}, deducts stock and writes {@code stock.updated} to
 * its outbox in the same transaction. The relays publish every {@code order.created} twice on
 * purpose ({@link DuplicatingPublisher}), and the first inventory process is halted between an
 * effect's commit and its offset commit; the supervisor restarts it. The report checks, from the
 * database, that every order had exactly one effect and that the stock is what the orders say.
 *
 * <p>Then failures: the warehouse, which the inventory calls for wholesale customers' orders
 * (behind a circuit breaker), is down for {@link Options#outageSeconds()}; those keys are parked
 * and drain in order afterwards, while other customers' orders flow on. Poison {@code
 * order.created} messages on dedicated keys (malformed JSON, schema version 3, orders of a product
 * the inventory does not know) are dead-lettered; after the "fix" (the product is added) the
 * unknown-product orders are replayed through the outbox and applied exactly once; the malformed
 * and unknown-version ones cannot be fixed by data and stay dead-lettered.
 *
 * <p>On a cluster ({@code --cluster}, {@link DemoInfrastructure#cluster()}) the same story runs on
 * three Kafka brokers and a PostgreSQL primary with a synchronous standby, and while the orders are
 * placed a partition leader is killed and the database fails over ({@link ClusterFaults}).
 */
final class ShopDemo {

  /** Demo settings. */
  record Options(
      int orders,
      int customers,
      int writers,
      int relays,
      int backlog,
      int crashAtBatch,
      int consumerCrashAt,
      Duration timeout,
      Path workDir,
      int outageSeconds,
      int metricsPort) {

    /** The settings before the scrape endpoint existed: a free port. */
    Options(
        int orders,
        int customers,
        int writers,
        int relays,
        int backlog,
        int crashAtBatch,
        int consumerCrashAt,
        Duration timeout,
        Path workDir,
        int outageSeconds) {
      this(
          orders,
          customers,
          writers,
          relays,
          backlog,
          crashAtBatch,
          consumerCrashAt,
          timeout,
          workDir,
          outageSeconds,
          0);
    }
  }

  private static final int WARMUP_ORDERS = 200;

  private final Options options;
  private final PrintStream out;
  private final ShopTransport.Kind kind;
  private final RelayMode mode;
  private final boolean cluster;
  private final Clock clock;
  private ShopTransport transport; // while run() runs
  private DemoMetrics metrics; // the scrape endpoint, while run() runs

  ShopDemo(Options options, PrintStream out) {
    this(options, out, ShopTransport.Kind.KAFKA);
  }

  /** The shop on {@code kind}'s broker ({@link ShopTransport}). */
  ShopDemo(Options options, PrintStream out, ShopTransport.Kind kind) {
    this(options, out, kind, RelayMode.POLLING_TABLE);
  }

  /**
   * The shop on {@code kind}'s broker with {@code mode}'s relay processes and outbox ({@link
   * RelayMode}: the CDC relay streams the schema's slot, which is dropped at the end).
   */
  ShopDemo(Options options, PrintStream out, ShopTransport.Kind kind, RelayMode mode) {
    this(options, out, kind, mode, false, Clock.systemUTC());
  }

  /**
   * The shop as above, on a cluster if {@code cluster} (Kafka and the polling relay only), the
   * faults' times read from {@code clock}.
   */
  ShopDemo(
      Options options,
      PrintStream out,
      ShopTransport.Kind kind,
      RelayMode mode,
      boolean cluster,
      Clock clock) {
    if (cluster) {
      DemoInfrastructure.checkClusterRun(kind, mode, options.orders());
    }
    this.options = options;
    this.out = out;
    this.kind = kind;
    this.mode = mode;
    this.cluster = cluster;
    this.clock = clock;
  }

  DemoReport run() throws Exception {
    Files.createDirectories(options.workDir());
    long t0 = System.nanoTime();
    try (DemoInfrastructure infra =
        cluster ? DemoInfrastructure.cluster() : DemoInfrastructure.single(kind)) {
      return run(infra, t0);
    }
  }

  private DemoReport run(DemoInfrastructure infra, long t0) throws Exception {
    PostgresServer pg = infra.postgres();
    transport = infra.transport();
    out.printf(
        "infrastructure up in %.1f s (%s + %s)%n",
        secondsSince(t0),
        cluster ? "PostgreSQL primary and synchronous standby" : "PostgreSQL",
        transport.describe());

    String schema = pg.createSchema("shop");
    String topic = "shop.orders." + schema;
    String stockTopic = "shop.stock." + schema;
    String inventory = "inventory-" + schema; // group ids are broker-wide; schemas are not
    transport.createTopics(topic, stockTopic, inventory);
    String paymentsTopic = "shop.payments." + schema;
    String replyTopic = "shop.payment-replies." + schema;
    String payments = "payments-" + schema;
    transport.createPaymentTopics(paymentsTopic, replyTopic, payments);
    try (HikariDataSource ds = pg.dataSource(schema, options.writers() + 2)) {
      PostboxMigrations.migrate(ds);
      ShopSchema.create(ds, options.customers());
      PaymentsPhase.createTables(ds);
      metrics = DemoMetrics.start(options.metricsPort(), ds, transport, inventory, topic);
      out.printf("metrics: %s (Prometheus text format)%n", metrics.url());

      DeliveryHistory history = new DeliveryHistory();
      OrderLoad load =
          new OrderLoad(
              options.writers(),
              options.customers(),
              options.backlog(),
              history,
              mode.ordersOutbox());
      out.printf(
          "relay: %s; the orders service writes its events as %s%n",
          mode.relay(), mode == RelayMode.CDC_EMIT ? "WAL-only logical messages" : "outbox rows");
      ShopObserver observer = new ShopObserver(out, options.timeout(), history);
      Optional<ClusterFaults> faults =
          cluster
              ? Optional.of(new ClusterFaults(infra, topic, options.orders(), clock, out))
              : Optional.empty();
      faults.ifPresent(f -> load.acrossFailover(options.timeout(), f::beforeOrder));
      PoisonAndReplay failures =
          new PoisonAndReplay(out, options.orders(), options.outageSeconds(), load, transport);
      AtomicBoolean consuming = new AtomicBoolean(true);
      Thread consumer =
          Thread.ofPlatform()
              .name("shop-consumer")
              .start(() -> transport.observe(topic, observer, consuming));
      DemoSupervisor supervisor =
          new DemoSupervisor(
              new DemoSupervisor.Settings(
                  pg.jdbcUrl(schema),
                  transport.address(),
                  topic,
                  stockTopic,
                  inventory,
                  options.relays(),
                  options.crashAtBatch(),
                  options.consumerCrashAt(),
                  options.workDir(),
                  kind,
                  paymentsTopic,
                  payments,
                  mode),
              out,
              metrics);
      try {
        supervisor.start();

        // Warm-up: freshly started relay JVMs connect, fetch metadata and JIT-compile on their
        // first batches; the inventory's injected crash usually fires here.
        // These orders are checked like all others but left out of the latency figures.
        load.placeOrders(ds, topic, WARMUP_ORDERS, false);
        observer.awaitConsumed(WARMUP_ORDERS);

        // Phase 1: the shop places orders while the relays run (latency, crash recovery).
        long p1 = System.nanoTime();
        load.placeOrders(ds, topic, options.orders(), true);
        double placeSeconds = secondsSince(p1);
        out.printf(
            "placed %,d orders in %.1f s with %d writers; waiting for the consumer%n",
            options.orders(), placeSeconds, options.writers());
        observer.awaitConsumed(WARMUP_ORDERS + options.orders());
        if (faults.isPresent()) {
          faults.get().awaitDone(); // the killed broker back, before the next phases
        }
        // The inventory is slower than the orders service (it receives every order twice, and it
        // restarts once); let it catch up so that it does not compete with the relays below.
        awaitInventory(ds, inventory, topic, "caught up", load.placed());

        // Phase 2: poison messages and a warehouse outage. The backlog below is written while the
        // warehouse is still down.
        long outageStart = System.nanoTime();
        Thread parkWatcher =
            Thread.ofPlatform()
                .name("park-watcher")
                .daemon(true)
                .start(() -> failures.watchParked(ds));
        PoisonAndReplay.Poison poison = failures.injectFailures(ds, topic);
        failures.awaitOthers(ds, poison.otherOrders(), outageStart, options.timeout());

        // Phase 3: relay throughput. The backlog is committed in one transaction, so the running
        // relays find all of it at once and drain it with the leases they hold; the rate is
        // measured from that commit to the last event consumed. (Pausing the relays with SIGSTOP
        // while writing it, as before, outlasted their 3 s leases whenever the write took longer:
        // the drain then began with a lease failover, one relay taking every lane while the
        // other waited for a share, and the figure measured that recovery, not the relays.)
        double relayRate = drainBacklog(ds, topic, load, observer);
        observer.awaitConsumed(load.committedCount());
        long outageLeft =
            Duration.ofSeconds(options.outageSeconds()).toNanos()
                - (System.nanoTime() - outageStart);
        if (outageLeft > 0) {
          Thread.sleep(Duration.ofNanos(outageLeft));
        }
        out.printf(
            "warehouse back after %d s; other customers' orders placed during the outage: %,d of"
                + " %,d applied while it was down%n",
            options.outageSeconds(),
            ShopAudit.applied(ds, poison.otherOrders()),
            poison.otherOrders().size());
        // Everything but the unknown-product orders applied, the parked keys drained.
        awaitInventory(
            ds,
            inventory,
            topic,
            "drained after the outage",
            load.placed() - PoisonAndReplay.UNKNOWN_PRODUCT);
        parkWatcher.interrupt();
        parkWatcher.join();
        // Request/reply: the orders service asks the payments process to authorise the wholesale
        // orders' charges (after the outage: its crash and restart must not slow the inventory
        // while the wholesale keys are to be parked).
        PaymentsPhase.Result paid =
            new PaymentsPhase(out, options.timeout()).run(ds, transport, paymentsTopic, replyTopic);
        long deadLetteredBeforeReplay = ShopAudit.deadLettered(ds);
        out.printf(
            "dead-lettered before replay: %d messages (%d poison sent); keys that had parked messages: %s%n",
            deadLetteredBeforeReplay, poison.ids().size(), new TreeSet<>(failures.parkedKeys()));
        ShopAudit.deadLetterReasons(ds).forEach(out::println);

        // Phase 4: the fix (the missing product), then a replay of its dead letters.
        PoisonAndReplay.Replay replay = failures.fixAndReplay(ds, inventory, poison);
        // The backlog's events are not for the inventory (it skips their type); let it read them.
        awaitInventory(ds, inventory, topic, "done", load.placed());
        long appliedAfterReplay = ShopAudit.appliedOnce(ds, replay.messageIds());
        Map<String, Double> scraped = metrics.snapshot(); // while the children still serve
        List<Map<String, Object>> traceExample = traceExample(ds, replay.messageIds());
        supervisor.stop(); // the inventory first (SIGTERM: it commits its offsets), then the relays
        consuming.set(false);
        consumer.join();

        return report(
            ds,
            load,
            observer,
            failures,
            supervisor,
            faults,
            new Phases(
                placeSeconds,
                relayRate,
                poison,
                deadLetteredBeforeReplay,
                replay,
                appliedAfterReplay,
                scraped,
                traceExample,
                paid));
      } finally {
        supervisor.stop();
        consuming.set(false);
        if (metrics != null) {
          metrics.close();
        }
        if (mode.cdc()) {
          CdcCleanup.dropSlotAndPublication(ds, out);
        }
      }
    }
  }

  /**
   * Phase 3, relay throughput: a backlog committed in one transaction, drained by the running
   * relays; returns the rate (events/s) from that commit to the last event consumed, 0 without one.
   */
  private double drainBacklog(
      HikariDataSource ds, String topic, OrderLoad load, ShopObserver observer) throws Exception {
    double relayRate = 0;
    if (options.backlog() > 0) {
      long epochs = ShopAudit.laneEpochs(ds);
      long p2 = load.writeBacklog(ds, topic);
      observer.awaitConsumed(load.committedCount());
      relayRate = options.backlog() / secondsSince(p2);
      out.printf(
          "backlog of %,d events drained at %,.0f events/s (lanes that changed owner"
              + " meanwhile: %d; more than 0 means the figure includes a lease failover)%n",
          options.backlog(), relayRate, ShopAudit.laneEpochs(ds) - epochs);
    }
    return relayRate;
  }

  /** What the phases measured, for the report. */
  private record Phases(
      double placeSeconds,
      double relayRate,
      PoisonAndReplay.Poison poison,
      long deadLetteredBeforeReplay,
      PoisonAndReplay.Replay replay,
      long appliedAfterReplay,
      Map<String, Double> scraped,
      List<Map<String, Object>> traceExample,
      PaymentsPhase.Result payments) {}

  /**
   * The report, after every process stopped: the observer's history, the inventory's figures from
   * the database, and the verdict (ok, or inconclusive if a crash or the parking never happened).
   */
  private DemoReport report(
      HikariDataSource ds,
      OrderLoad load,
      ShopObserver observer,
      PoisonAndReplay failures,
      DemoSupervisor supervisor,
      Optional<ClusterFaults> faults,
      Phases f)
      throws Exception {
    DeliveryHistory.Report h = observer.checkObservations();
    ShopAudit.InventoryFigures inv = ShopAudit.inventoryFigures(ds);
    double[] lat = observer.latenciesMillis(load.commitNanos());
    long orders = load.placed();
    long deadLettered = ShopAudit.deadLettered(ds);
    long parkedOrderViolations = ShopAudit.parkedOrderViolations(ds, failures.parkedKeys());
    boolean inconclusive =
        (options.crashAtBatch() > 0 && supervisor.relayCrashes() == 0)
            || (options.consumerCrashAt() > 0 && supervisor.consumerCrashes() == 0)
            || (options.outageSeconds() > 0 && failures.parkedKeys().isEmpty())
            || supervisor.paymentsCrashes() == 0
            || (faults.isPresent() && !faults.get().allFired());
    boolean invariants =
        h.ok()
            && inv.effectsApplied() == orders
            && inv.duplicateEffects() == 0
            && inv.stockActual() == inv.stockExpected()
            && inv.duplicatesSuppressed() > 0
            && f.deadLetteredBeforeReplay() == f.poison().ids().size()
            && deadLettered == f.poison().unfixable()
            && f.replay().replayed() == PoisonAndReplay.UNKNOWN_PRODUCT
            && f.appliedAfterReplay() == f.replay().replayed()
            && parkedOrderViolations == 0
            && f.payments().ok();
    boolean ok = invariants && !inconclusive;
    return new DemoReport(
        orders,
        options.backlog(),
        options.relays(),
        h.committed(),
        h.distinctObserved(),
        h.missing(),
        h.orderViolations(),
        h.duplicates(),
        h.unexpected(),
        supervisor.relayCrashes(),
        f.relayRate(),
        options.orders() / f.placeSeconds(),
        ShopObserver.percentile(lat, 50),
        ShopObserver.percentile(lat, 99),
        lat.length == 0 ? 0 : lat[lat.length - 1],
        ok,
        inconclusive && invariants,
        supervisor.consumerCrashes(),
        inv.duplicatesDelivered(),
        inv.duplicatesSuppressed(),
        inv.effectsApplied(),
        inv.duplicateEffects(),
        inv.stockExpected(),
        inv.stockActual(),
        f.poison().ids().size(),
        deadLettered,
        f.replay().replayed(),
        f.appliedAfterReplay(),
        parkedOrderViolations,
        f.poison().unfixable(),
        f.deadLetteredBeforeReplay(),
        failures.parkedKeys().size(),
        options.outageSeconds(),
        f.scraped(),
        f.traceExample(),
        kind.id(),
        f.payments().requestsSent(),
        f.payments().repliesReceived(),
        f.payments().duplicateCharges(),
        f.payments().requestTimeouts(),
        f.payments().lateReplies(),
        f.payments().p50(),
        f.payments().p99(),
        supervisor.paymentsCrashes(),
        f.payments().resent(),
        f.payments().ordersCharged(),
        mode.relay(),
        mode.outbox(),
        cluster,
        faults.map(c -> c.report(observer, load.commitNanos())).orElse(List.of()));
  }

  /** The trace of the first replayed message (printed, and a list of steps for the report). */
  private List<Map<String, Object>> traceExample(HikariDataSource ds, List<UUID> replayed) {
    if (replayed.isEmpty()) {
      return List.of();
    }
    MessageTrace trace = MessageTracer.postgres(ds).trace(replayed.get(0));
    out.println("trace of a replayed message (./postbox trace " + trace.messageId() + "):");
    TraceOutput.print(trace, out);
    return TraceOutput.steps(trace);
  }

  private static double secondsSince(long nanos) {
    return (System.nanoTime() - nanos) / 1e9;
  }

  /**
   * Waits until the inventory applied every order and has nothing left to read: every row of the
   * orders topic is marked published (so both copies are on the topic) and the inventory has
   * nothing left to read ({@link ShopTransport#notYetDone}: on Kafka its committed offsets reached
   * the end of the topic). So late duplicates are counted too.
   */
  private void awaitInventory(
      HikariDataSource ds, String group, String topic, String what, long orders) throws Exception {
    long deadline = System.nanoTime() + options.timeout().toNanos();
    long effects = 0;
    long lag = -1;
    long t0 = System.nanoTime();
    while (System.nanoTime() < deadline) {
      effects = ShopAudit.queryLong(ds, "SELECT count(DISTINCT message_id) FROM inventory_effects");
      if (effects >= orders
          && ShopAudit.unpublished(ds, topic) == 0
          && ShopAudit.queryLong(ds, "SELECT count(*) FROM postbox_parked") == 0) {
        lag = transport.notYetDone(ds, group, topic);
        if (lag == 0) {
          out.printf(
              "inventory %s: %,d orders applied, every record read (waited %.1f s)%n",
              what, effects, secondsSince(t0));
          return;
        }
      }
      Thread.sleep(200);
    }
    out.printf(
        "timed out after %s: the inventory applied %,d of %,d orders (records not yet done: %s)%n",
        options.timeout(), effects, orders, lag < 0 ? "?" : Long.toString(lag));
  }
}
