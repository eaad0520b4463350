package dev.postbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.cli.TraceOutput;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.jdbc.MessageTrace;
import dev.postbox.jdbc.MessageTracer;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.Replayer;
import dev.postbox.kafka.KafkaDeadLetters;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.DeliveryHistory;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.PostboxInfrastructure;
import dev.postbox.testkit.PostgresServer;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

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
  private static final int PRODUCTS = 50;
  private static final long INITIAL_STOCK = 10_000;
  private static final int WHOLESALE_CUSTOMERS = 3;
  private static final int WHOLESALE_ORDERS = 30; // spread over the wholesale customers, 3 s
  private static final int MALFORMED = 2;
  private static final int UNKNOWN_VERSION = 2;
  private static final int UNKNOWN_PRODUCT = 3;
  private static final String NEW_SKU = "sku-900"; // ordered before the inventory knows it

  private final Options options;
  private final PrintStream out;
  private final DeliveryHistory history = new DeliveryHistory();
  private final List<Observation> observations = new ArrayList<>(); // guarded by itself
  private final Map<UUID, Long> commitNanos = new ConcurrentHashMap<>();
  private final Map<UUID, Long> receiveNanos = new ConcurrentHashMap<>();
  private final AtomicInteger crashes = new AtomicInteger();
  private final AtomicInteger consumerCrashes = new AtomicInteger();
  private final AtomicInteger ordersPlaced = new AtomicInteger(); // order rows committed
  private final Set<String> parkedKeys = ConcurrentHashMap.newKeySet();
  private DemoMetrics metrics; // the scrape endpoint, while run() runs

  ShopDemo(Options options, PrintStream out) {
    this.options = options;
    this.out = out;
  }

  DemoReport run() throws Exception {
    Files.createDirectories(options.workDir());
    PostboxInfrastructure infra = PostboxInfrastructure.shared();
    long t0 = System.nanoTime();
    PostgresServer pg = infra.postgres();
    KafkaBroker kafka = infra.kafka();
    out.printf(
        "infrastructure up in %.1f s (PostgreSQL + Kafka broker process)%n", secondsSince(t0));

    String schema = pg.createSchema("shop");
    String topic = "shop.orders." + schema;
    String stockTopic = "shop.stock." + schema;
    String inventory = "inventory-" + schema; // group ids are broker-wide; schemas are not
    kafka.createTopic(topic, 6);
    kafka.createTopic(stockTopic, 3);
    try (HikariDataSource ds = pg.dataSource(schema, options.writers() + 2)) {
      PostboxMigrations.migrate(ds);
      createShopTables(ds);
      metrics = DemoMetrics.start(options.metricsPort(), ds, kafka.bootstrapServers(), inventory);
      out.printf("metrics: %s (Prometheus text format)%n", metrics.url());

      AtomicBoolean consuming = new AtomicBoolean(true);
      Thread consumer =
          Thread.ofPlatform()
              .name("shop-consumer")
              .start(() -> consume(kafka.bootstrapServers(), topic, consuming));
      Supervisor supervisor =
          new Supervisor(
              pg.jdbcUrl(schema), kafka.bootstrapServers(), topic, stockTopic, inventory);
      try {
        supervisor.start();

        // Warm-up: freshly started relay JVMs connect, fetch metadata and JIT-compile on their
        // first batches; the inventory's injected crash usually fires here.
        // These orders are checked like all others but left out of the latency figures.
        placeOrders(ds, topic, WARMUP_ORDERS, false);
        awaitConsumed(WARMUP_ORDERS);

        // Phase 1: the shop places orders while the relays run (latency, crash recovery).
        long p1 = System.nanoTime();
        placeOrders(ds, topic, options.orders(), true);
        double placeSeconds = secondsSince(p1);
        out.printf(
            "placed %,d orders in %.1f s with %d writers; waiting for the consumer%n",
            options.orders(), placeSeconds, options.writers());
        awaitConsumed(WARMUP_ORDERS + options.orders());
        // The inventory is slower than the orders service (it receives every order twice, and it
        // restarts once); let it catch up so that it does not compete with the relays below.
        awaitInventory(
            ds, kafka.bootstrapServers(), inventory, topic, "caught up", ordersPlaced.get());

        // Phase 2: poison messages and a warehouse outage. The backlog below is written while the
        // warehouse is still down.
        long outageStart = System.nanoTime();
        Thread parkWatcher =
            Thread.ofPlatform().name("park-watcher").daemon(true).start(() -> watchParked(ds));
        Poison poison = injectFailures(ds, topic);
        awaitOthers(ds, poison.otherOrders(), outageStart);

        // Phase 3: relay throughput. The backlog is committed in one transaction, so the running
        // relays find all of it at once and drain it with the leases they hold; the rate is
        // measured from that commit to the last event consumed. (Pausing the relays with SIGSTOP
        // while writing it, as before, outlasted their 3 s leases whenever the write took longer:
        // the drain then began with a lease failover, one relay taking every lane while the
        // other waited for a share, and the figure measured that recovery, not the relays.)
        double relayRate = 0;
        if (options.backlog() > 0) {
          long epochs = laneEpochs(ds);
          long p2 = writeBacklog(ds, topic);
          awaitConsumed(committedEvents());
          relayRate = options.backlog() / secondsSince(p2);
          out.printf(
              "backlog of %,d events drained at %,.0f events/s (lanes that changed owner"
                  + " meanwhile: %d; more than 0 means the figure includes a lease failover)%n",
              options.backlog(), relayRate, laneEpochs(ds) - epochs);
        }
        awaitConsumed(committedEvents());
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
            applied(ds, poison.otherOrders()),
            poison.otherOrders().size());
        // Everything but the unknown-product orders applied, the parked keys drained.
        awaitInventory(
            ds,
            kafka.bootstrapServers(),
            inventory,
            topic,
            "drained after the outage",
            ordersPlaced.get() - UNKNOWN_PRODUCT);
        parkWatcher.interrupt();
        parkWatcher.join();
        long deadLetteredBeforeReplay = deadLettered(ds);
        out.printf(
            "dead-lettered before replay: %d messages (%d poison sent); keys that had parked messages: %s%n",
            deadLetteredBeforeReplay, poison.ids().size(), new TreeSet<>(parkedKeys));
        deadLetterReasons(ds).forEach(out::println);

        // Phase 4: the fix (the missing product), then a replay of its dead letters.
        Replay replay = fixAndReplay(ds, inventory, poison);
        // The backlog's events are not for the inventory (it skips their type); let it read them.
        awaitInventory(ds, kafka.bootstrapServers(), inventory, topic, "done", ordersPlaced.get());
        long appliedAfterReplay = appliedOnce(ds, replay.messageIds());
        Map<String, Double> scraped = metrics.snapshot(); // while the children still serve
        List<Map<String, Object>> traceExample = traceExample(ds, replay.messageIds());
        supervisor.stop(); // the inventory first (SIGTERM: it commits its offsets), then the relays
        consuming.set(false);
        consumer.join();

        DeliveryHistory.Report h = checkObservations();
        InventoryFigures inv = inventoryFigures(ds);
        double[] lat = latenciesMillis();
        long orders = ordersPlaced.get();
        long deadLettered = deadLettered(ds);
        long parkedOrderViolations = parkedOrderViolations(ds, parkedKeys);
        boolean inconclusive =
            (options.crashAtBatch() > 0 && crashes.get() == 0)
                || (options.consumerCrashAt() > 0 && consumerCrashes.get() == 0)
                || (options.outageSeconds() > 0 && parkedKeys.isEmpty());
        boolean invariants =
            h.ok()
                && inv.effectsApplied() == orders
                && inv.duplicateEffects() == 0
                && inv.stockActual() == inv.stockExpected()
                && inv.duplicatesSuppressed() > 0
                && deadLetteredBeforeReplay == poison.ids().size()
                && deadLettered == poison.unfixable()
                && replay.replayed() == UNKNOWN_PRODUCT
                && appliedAfterReplay == replay.replayed()
                && parkedOrderViolations == 0;
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
            crashes.get(),
            relayRate,
            options.orders() / placeSeconds,
            percentile(lat, 50),
            percentile(lat, 99),
            lat.length == 0 ? 0 : lat[lat.length - 1],
            ok,
            inconclusive && invariants,
            consumerCrashes.get(),
            inv.duplicatesDelivered(),
            inv.duplicatesSuppressed(),
            inv.effectsApplied(),
            inv.duplicateEffects(),
            inv.stockExpected(),
            inv.stockActual(),
            poison.ids().size(),
            deadLettered,
            replay.replayed(),
            appliedAfterReplay,
            parkedOrderViolations,
            poison.unfixable(),
            deadLetteredBeforeReplay,
            parkedKeys.size(),
            options.outageSeconds(),
            scraped,
            traceExample);
      } finally {
        supervisor.stop();
        consuming.set(false);
        if (metrics != null) {
          metrics.close();
        }
      }
    }
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

  private void createShopTables(HikariDataSource ds) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE customers (id text PRIMARY KEY, orders bigint NOT NULL DEFAULT 0)");
      s.execute(
          "CREATE TABLE products (sku text PRIMARY KEY, initial_stock bigint NOT NULL,"
              + " stock bigint NOT NULL)");
      s.execute(
          "CREATE TABLE orders (id uuid PRIMARY KEY, customer_id text NOT NULL REFERENCES customers,"
              + " seq bigint NOT NULL, amount_cents bigint NOT NULL,"
              // no foreign key to products: the orders service sells a product (NEW_SKU) before the
              // inventory knows it; those orders are dead-lettered until the "fix" adds it
              + " sku text NOT NULL, quantity int NOT NULL,"
              + " created_at timestamptz NOT NULL DEFAULT now())");
      // The inventory's audit of its effects: deliberately no unique constraint, so that a second
      // effect of one message would be a second row (counted as a duplicate effect).
      s.execute(
          "CREATE TABLE inventory_effects (id bigserial, message_id uuid NOT NULL, order_id uuid NOT NULL,"
              + " sku text NOT NULL, quantity int NOT NULL, incarnation int NOT NULL,"
              + " applied_at timestamptz NOT NULL DEFAULT now())");
      // One row per delivery the inventory's inbox suppressed as a duplicate.
      s.execute(
          "CREATE TABLE inventory_suppressed (message_id uuid NOT NULL, incarnation int NOT NULL,"
              + " suppressed_at timestamptz NOT NULL DEFAULT now())");
      s.execute(
          "INSERT INTO products (sku, initial_stock, stock) SELECT 'sku-' || lpad(g::text, 3, '0'), "
              + INITIAL_STOCK
              + ", "
              + INITIAL_STOCK
              + " FROM generate_series(1, "
              + PRODUCTS
              + ") g");
      s.execute(
          "INSERT INTO customers (id) SELECT 'customer-' || g FROM generate_series(1, "
              + options.customers()
              + ") g");
      // dedicated keys: the wholesale customers (their orders need the warehouse) and the
      // customers who order the product the inventory does not know yet
      s.execute(
          "INSERT INTO customers (id) SELECT '"
              + InventoryProcess.WHOLESALE
              + "' || g FROM generate_series(1, "
              + WHOLESALE_CUSTOMERS
              + ") g");
      s.execute(
          "INSERT INTO customers (id) SELECT 'newsku-' || g FROM generate_series(1, "
              + UNKNOWN_PRODUCT
              + ") g");
      // the simulated warehouse is down while a row here says so (InventoryProcess)
      s.execute("CREATE TABLE warehouse_outage (until timestamptz NOT NULL)");
    }
  }

  /** The orders service: each order is one transaction writing the order row and its event. */
  private void placeOrders(HikariDataSource ds, String topic, int count, boolean measured)
      throws Exception {
    placeOrders(ds, topic, count, measured, null);
  }

  /** Like above; adds the message ids to {@code ids} if not null. */
  private void placeOrders(
      HikariDataSource ds, String topic, int count, boolean measured, Set<UUID> ids)
      throws Exception {
    Outbox outbox = Outbox.postgres();
    AtomicInteger next = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(options.writers());
    List<Future<?>> futures = new ArrayList<>();
    for (int w = 0; w < options.writers(); w++) {
      long seed = 42 + w;
      futures.add(
          pool.submit(() -> {
            Random random = new Random(seed);
            while (next.getAndIncrement() < count) {
              String customer = "customer-" + (1 + hotSkewed(random));
              Message m =
                  outbox.inTransaction(
                      ds, tx -> placeOrder(tx.connection(), outbox, topic, customer, random, null));
              ordersPlaced.incrementAndGet();
              long seq = Long.parseLong(m.header("seq").orElseThrow());
              if (measured) {
                commitNanos.put(m.id(), System.nanoTime());
              }
              if (ids != null) {
                ids.add(m.id());
              }
              synchronized (history) {
                history.committed(customer, seq, m.id().toString());
              }
            }
            return null;
          }));
    }
    for (Future<?> f : futures) {
      f.get();
    }
    pool.shutdown();
  }

  /**
   * Customer ids skewed towards a few hot customers (a quarter of the orders go to 5 % of them).
   */
  private int hotSkewed(Random random) {
    int hot = Math.max(1, options.customers() / 20);
    return random.nextInt(4) == 0 ? random.nextInt(hot) : random.nextInt(options.customers());
  }

  /** One order of {@code customer}, for {@code sku} or, if null, a random product. */
  private static Message placeOrder(
      Connection c, Outbox outbox, String topic, String customer, Random random, String sku)
      throws Exception {
    long seq;
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE customers SET orders = orders + 1 WHERE id = ? RETURNING orders")) {
      ps.setString(1, customer);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        seq = rs.getLong(1);
      }
    }
    UUID orderId = UUID.randomUUID();
    long amount = 100 + random.nextInt(10_000);
    String product = String.format("sku-%03d", 1 + random.nextInt(PRODUCTS));
    if (sku != null) {
      product = sku;
    }
    int quantity = 1 + random.nextInt(5);
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO orders (id, customer_id, seq, amount_cents, sku, quantity)"
                + " VALUES (?, ?, ?, ?, ?, ?)")) {
      ps.setObject(1, orderId);
      ps.setString(2, customer);
      ps.setLong(3, seq);
      ps.setLong(4, amount);
      ps.setString(5, product);
      ps.setInt(6, quantity);
      ps.executeUpdate();
    }
    Message m =
        ShopEvents.TYPES
            .newMessage(
                topic,
                new ShopEvents.OrderCreated(orderId, customer, seq, amount, product, quantity))
            .key(customer)
            .source("/shop/orders")
            .header("seq", Long.toString(seq))
            .build();
    outbox.write(c, m);
    return m;
  }

  /**
   * Bulk events written by one writer in one transaction (so program order is commit order, and the
   * relays see none of it before they can see all of it).
   *
   * @return {@link System#nanoTime()} just before the commit: the drain cannot start earlier
   */
  private long writeBacklog(HikariDataSource ds, String topic) {
    Map<String, Long> seqs = new HashMap<>();
    List<Message> backlog = new ArrayList<>(options.backlog());
    for (int i = 0; i < options.backlog(); i++) {
      String key = "bulk-" + (i % 500);
      long seq = seqs.merge(key, 1L, Long::sum);
      backlog.add(
          Message.builder(topic, "order.imported")
              .key(key)
              .source("/shop/import")
              .header("seq", Long.toString(seq))
              .jsonPayload("{\"key\":\"" + key + "\",\"seq\":" + seq + "}")
              .build());
    }
    long committing =
        Outbox.postgres()
            .inTransaction(
                ds,
                tx -> {
                  tx.writeAll(backlog);
                  return System.nanoTime();
                });
    synchronized (history) {
      for (Message m : backlog) {
        history.committed(
            m.key().orElseThrow(),
            Long.parseLong(m.header("seq").orElseThrow()),
            m.id().toString());
      }
    }
    return committing;
  }

  /** The consumer: reads the topic (read_committed) and records what it sees. */
  private void consume(String bootstrap, String topic, AtomicBoolean running) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 2000);
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      for (PartitionInfo pi : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
        tps.add(new TopicPartition(topic, pi.partition()));
      }
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      while (running.get()) {
        var records = consumer.poll(Duration.ofMillis(100));
        long now = System.nanoTime();
        for (ConsumerRecord<byte[], byte[]> r : records) {
          Message m = KafkaRecords.fromRecord(r);
          // the seq header, not the payload: the poison messages' payloads may not even parse
          long seq = Long.parseLong(m.header("seq").orElseThrow());
          receiveNanos.putIfAbsent(m.id(), now);
          synchronized (observations) {
            observations.add(new Observation(m.key().orElseThrow(), seq, m.id().toString()));
          }
        }
      }
    } catch (Exception e) {
      out.println("consumer failed: " + e);
    }
  }

  /** A message as the consumer saw it, in the order it saw them. */
  private record Observation(String key, long seq, String id) {}

  /**
   * Replays the observations into the history once every commit is recorded. (Checking each one as
   * it arrived raced with the writers: a writer records its order after the commit returns, and the
   * relay and consumer can be faster, which was then miscounted as an unexpected event.)
   */
  private DeliveryHistory.Report checkObservations() {
    synchronized (history) {
      synchronized (observations) {
        for (Observation o : observations) {
          history.observed(o.key(), o.seq(), o.id());
        }
        observations.clear();
      }
      return history.report();
    }
  }

  private void awaitConsumed(long distinct) throws InterruptedException {
    long deadline = System.nanoTime() + options.timeout().toNanos();
    while (receiveNanos.size() < distinct && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    if (receiveNanos.size() < distinct) {
      out.printf(
          "timed out after %s: %,d of %,d events consumed%n",
          options.timeout(), receiveNanos.size(), distinct);
    }
  }

  private double[] latenciesMillis() {
    double[] lat =
        commitNanos.entrySet().stream()
            .filter(e -> receiveNanos.containsKey(e.getKey()))
            .mapToDouble(e -> Math.max(0, receiveNanos.get(e.getKey()) - e.getValue()) / 1e6)
            .toArray();
    Arrays.sort(lat);
    return lat;
  }

  private static double percentile(double[] sorted, double p) {
    if (sorted.length == 0) {
      return 0;
    }
    int i = (int) Math.ceil(p / 100 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }

  private static double secondsSince(long nanos) {
    return (System.nanoTime() - nanos) / 1e9;
  }

  /**
   * Waits until the inventory applied every order and has nothing left to read: every row of the
   * orders topic is marked published (so both copies are on the topic) and the inventory's
   * committed offsets reached the end of the topic. So late duplicates are counted too.
   */
  private void awaitInventory(
      HikariDataSource ds, String bootstrap, String group, String topic, String what, long orders)
      throws Exception {
    long deadline = System.nanoTime() + options.timeout().toNanos();
    long effects = 0;
    long lag = -1;
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    long t0 = System.nanoTime();
    try (Admin admin = Admin.create(p)) {
      while (System.nanoTime() < deadline) {
        effects = queryLong(ds, "SELECT count(DISTINCT message_id) FROM inventory_effects");
        if (effects >= orders
            && unpublished(ds, topic) == 0
            && queryLong(ds, "SELECT count(*) FROM postbox_parked") == 0) {
          lag = lag(admin, group, topic);
          if (lag == 0) {
            out.printf(
                "inventory %s: %,d orders applied, every record read (waited %.1f s)%n",
                what, effects, secondsSince(t0));
            return;
          }
        }
        Thread.sleep(200);
      }
    }
    out.printf(
        "timed out after %s: the inventory applied %,d of %,d orders (records not yet done: %s)%n",
        options.timeout(), effects, orders, lag < 0 ? "?" : Long.toString(lag));
  }

  private static long unpublished(HikariDataSource ds, String topic) throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM postbox_outbox"
                    + " WHERE topic = ? AND published_at IS NULL AND failed_at IS NULL")) {
      ps.setString(1, topic);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** Records of {@code topic} beyond the group's committed offsets. */
  private static long lag(Admin admin, String group, String topic) throws Exception {
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
    int partitions =
        admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (int i = 0; i < partitions; i++) {
      latest.put(new TopicPartition(topic, i), OffsetSpec.latest());
    }
    long lag = 0;
    for (var end : admin.listOffsets(latest).all().get().entrySet()) {
      OffsetAndMetadata c = committed.get(end.getKey());
      lag += end.getValue().offset() - (c == null ? 0 : c.offset());
    }
    return lag;
  }

  private long committedEvents() {
    synchronized (history) {
      return history.committedCount();
    }
  }

  /**
   * The poison messages written (message ids), the keys of those a fix can repair, how many no fix
   * can repair, and the other customers' orders placed during the warehouse outage.
   */
  private record Poison(
      List<UUID> ids, List<String> fixableKeys, int unfixable, Set<UUID> otherOrders) {}

  /**
   * Takes the warehouse down for the outage, has the wholesale customers (whose orders need it)
   * order during it while other customers order too, and writes the poison messages: malformed
   * JSON, an unknown schema version (both from a buggy producer, so they have no order row) and
   * orders of a product the inventory does not know yet. All poison use dedicated keys ({@code
   * poison-*}, {@code newsku-*}), one to a few messages each, with their own seq numbers.
   */
  private Poison injectFailures(HikariDataSource ds, String topic) throws Exception {
    Outbox outbox = Outbox.postgres();
    if (options.outageSeconds() > 0) {
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "INSERT INTO warehouse_outage (until) VALUES (now() + interval '"
                + options.outageSeconds()
                + " seconds')");
      }
      out.printf(
          "warehouse down for %d s; %d orders of %d wholesale customers need it%n",
          options.outageSeconds(), WHOLESALE_ORDERS, WHOLESALE_CUSTOMERS);
    }
    Set<UUID> others = ConcurrentHashMap.newKeySet();
    ExecutorService otherCustomers = Executors.newSingleThreadExecutor();
    Future<?> othersDone =
        otherCustomers.submit(() -> {
          placeOrders(ds, topic, Math.max(50, options.orders() / 10), false, others);
          return null;
        });
    Random random = new Random(7);
    List<UUID> poison = new ArrayList<>();
    List<String> fixableKeys = new ArrayList<>();
    for (int i = 0; i < WHOLESALE_ORDERS; i++) {
      String customer = InventoryProcess.WHOLESALE + (1 + i % WHOLESALE_CUSTOMERS);
      committed(
          outbox.inTransaction(
              ds, tx -> placeOrder(tx.connection(), outbox, topic, customer, random, null)));
      ordersPlaced.incrementAndGet();
      if (i == WHOLESALE_ORDERS / 2) {
        for (int p = 1; p <= MALFORMED; p++) {
          Message m =
              Message.builder(topic, ShopEvents.ORDER_CREATED)
                  .key("poison-malformed-" + p)
                  .source("/shop/orders")
                  .header("seq", "1")
                  .jsonPayload("{\"orderId\": \"" + UUID.randomUUID() + "\", \"customerId\": ")
                  .build();
          poison.add(writePoison(ds, outbox, m));
        }
        for (int p = 1; p <= UNKNOWN_VERSION; p++) {
          String key = "poison-v3-" + p;
          Message m =
              ShopEvents.TYPES
                  .newMessage(
                      topic,
                      new ShopEvents.OrderCreated(UUID.randomUUID(), key, 1, 100, "sku-001", 1))
                  .schemaVersion(3)
                  .key(key)
                  .source("/shop/orders")
                  .header("seq", "1")
                  .build();
          poison.add(writePoison(ds, outbox, m));
        }
        for (int p = 1; p <= UNKNOWN_PRODUCT; p++) {
          String customer2 = "newsku-" + p;
          Message m =
              outbox.inTransaction(
                  ds, tx -> placeOrder(tx.connection(), outbox, topic, customer2, random, NEW_SKU));
          ordersPlaced.incrementAndGet();
          committed(m);
          poison.add(m.id());
          fixableKeys.add(customer2);
        }
        out.printf(
            "poison written: %d malformed JSON, %d of schema version 3 (only 1 is known),"
                + " %d orders of %s (a product the inventory does not know)%n",
            MALFORMED, UNKNOWN_VERSION, UNKNOWN_PRODUCT, NEW_SKU);
      }
      Thread.sleep(100);
    }
    othersDone.get();
    otherCustomers.shutdown();
    return new Poison(
        List.copyOf(poison), List.copyOf(fixableKeys), MALFORMED + UNKNOWN_VERSION, others);
  }

  private UUID writePoison(HikariDataSource ds, Outbox outbox, Message m) {
    outbox.inTransaction(
        ds,
        tx -> {
          tx.writeAll(List.of(m));
          return null;
        });
    committed(m);
    return m.id();
  }

  private void committed(Message m) {
    synchronized (history) {
      history.committed(
          m.key().orElseThrow(), Long.parseLong(m.header("seq").orElseThrow()), m.id().toString());
    }
  }

  /** Collects the keys that have parked messages, until interrupted. */
  private void watchParked(HikariDataSource ds) {
    while (!Thread.currentThread().isInterrupted()) {
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT DISTINCT msg_key FROM postbox_parked")) {
        while (rs.next()) {
          parkedKeys.add(rs.getString(1));
        }
      } catch (Exception e) {
        if (Thread.currentThread().isInterrupted()) {
          return;
        }
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** Distinct messages with a PENDING dead letter. */
  /** The sum of the lanes' lease epochs: it grows by one each time a relay acquires a lane. */
  private static long laneEpochs(HikariDataSource ds) throws Exception {
    return queryLong(ds, "SELECT coalesce(sum(epoch), 0) FROM postbox_relay_lane");
  }

  private static long deadLettered(HikariDataSource ds) throws Exception {
    return queryLong(
        ds, "SELECT count(DISTINCT message_id) FROM postbox_dead_letter WHERE status = 'PENDING'");
  }

  /** One line per dead-lettered message: its key, why and how it was classified. */
  private static List<String> deadLetterReasons(HikariDataSource ds) throws Exception {
    List<String> lines = new ArrayList<>();
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT DISTINCT ON (message_id) convert_from(msg_key, 'UTF8'), classification,"
                    + " regexp_replace(error_class, '.*[.$]', ''), error_message, status"
                    + " FROM postbox_dead_letter ORDER BY message_id, id")) {
      while (rs.next()) {
        String message = rs.getString(4) == null ? "" : rs.getString(4);
        if (message.length() > 90) {
          message = message.substring(0, 90) + "...";
        }
        lines.add(
            String.format(
                "  %-18s %-9s %s: %s", rs.getString(1), rs.getString(2), rs.getString(3), message));
      }
    }
    lines.sort(null);
    return lines;
  }

  /** The message ids replayed. */
  private record Replay(long replayed, List<UUID> messageIds) {}

  /**
   * The fix: the product the unknown-product orders name is added to the inventory; then their dead
   * letters are replayed (written to the outbox again with the same ids, at 50/s). The topic
   * carries every order.created twice, so such a message may have two letters: the later one is
   * discarded with that reason before the replay (replaying both would write the message to the
   * outbox twice), and so is any letter still pending whose message was replayed. The malformed and
   * unknown-version messages cannot be fixed by data: they stay dead-lettered (PENDING), for a
   * producer fix or an operator's discard.
   */
  private Replay fixAndReplay(HikariDataSource ds, String consumer, Poison poison)
      throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO products (sku, initial_stock, stock) VALUES (?, ?, ?)")) {
      ps.setString(1, NEW_SKU);
      ps.setLong(2, INITIAL_STOCK);
      ps.setLong(3, INITIAL_STOCK);
      ps.executeUpdate();
    }
    DeadLetterStore store = PostgresDeadLetterStore.create(ds);
    Replayer replayer =
        Replayer.builder(ds, store, KafkaDeadLetters.decoder())
            .ratePerSecond(50)
            .by("demo")
            .build();
    List<Long> second = new ArrayList<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT d.id FROM postbox_dead_letter d WHERE d.status = 'PENDING'"
                    + " AND d.consumer = ? AND convert_from(d.msg_key, 'UTF8') = ANY (?) AND EXISTS"
                    + " (SELECT 1 FROM postbox_dead_letter f WHERE f.consumer = d.consumer"
                    + " AND f.message_id = d.message_id AND f.status = 'PENDING' AND f.id < d.id)")) {
      ps.setString(1, consumer);
      ps.setArray(2, c.createArrayOf("text", poison.fixableKeys().toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          second.add(rs.getLong(1));
        }
      }
    }
    for (long id : second) {
      replayer.discard(
          id, "a second letter of the same message (the topic carries it twice); one is replayed");
    }
    int letters = 0;
    for (String key : poison.fixableKeys()) {
      letters += replayer.replayKey(consumer, key).replayed().size();
    }
    List<Long> leftOver = new ArrayList<>();
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT d.id FROM postbox_dead_letter d WHERE d.status = 'PENDING' AND EXISTS"
                    + " (SELECT 1 FROM postbox_dead_letter r WHERE r.consumer = d.consumer"
                    + " AND r.message_id = d.message_id AND r.status = 'REPLAYED')")) {
      while (rs.next()) {
        leftOver.add(rs.getLong(1));
      }
    }
    for (long id : leftOver) {
      replayer.discard(id, "another letter of this message was replayed");
    }
    List<UUID> ids = new ArrayList<>();
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT DISTINCT message_id FROM postbox_dead_letter WHERE status = 'REPLAYED'")) {
      while (rs.next()) {
        ids.add(rs.getObject(1, UUID.class));
      }
    }
    out.printf(
        "fix: %s added to the products; replayed %d dead letter(s) = %d message(s) through the"
            + " outbox at 50/s (%d second letter(s) of a message discarded)%n",
        NEW_SKU, letters, ids.size(), second.size() + leftOver.size());
    return new Replay(ids.size(), ids);
  }

  /** How many of {@code ids} have exactly one effect. */
  private static long appliedOnce(HikariDataSource ds, List<UUID> ids) throws Exception {
    return countOf(
        ds,
        "SELECT count(*) FROM (SELECT message_id FROM inventory_effects"
            + " WHERE message_id = ANY (?) GROUP BY message_id HAVING count(*) = 1) x",
        ids);
  }

  /** Runs a {@code count(*)} query whose one parameter is the uuid array {@code ids}. */
  private static long countOf(HikariDataSource ds, String sql, java.util.Collection<UUID> ids)
      throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setArray(1, c.createArrayOf("uuid", ids.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /**
   * Waits until the other customers' orders placed during the outage are applied (they flow on
   * while the wholesale keys are parked), so that the backlog below does not compete with them.
   */
  private void awaitOthers(HikariDataSource ds, Set<UUID> others, long outageStart)
      throws Exception {
    long deadline = System.nanoTime() + options.timeout().toNanos();
    long applied = 0;
    while (System.nanoTime() < deadline && (applied = applied(ds, others)) < others.size()) {
      Thread.sleep(100);
    }
    out.printf(
        "other customers' orders placed meanwhile: %,d of %,d applied %.1f s into the outage%n",
        applied, others.size(), secondsSince(outageStart));
  }

  /** How many of {@code ids} have an effect. */
  private static long applied(HikariDataSource ds, Set<UUID> ids) throws Exception {
    return countOf(
        ds,
        "SELECT count(DISTINCT message_id) FROM inventory_effects WHERE message_id = ANY (?)",
        ids);
  }

  /**
   * Per-key order of the inventory's effects for {@code keys}: effects (in the order they were
   * written, {@code inventory_effects.id}) whose order has a lower seq than an effect of its key
   * written before it.
   */
  private static long parkedOrderViolations(HikariDataSource ds, Set<String> keys)
      throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM (SELECT o.seq, max(o.seq) OVER (PARTITION BY o.customer_id"
                    + " ORDER BY e.id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before"
                    + " FROM inventory_effects e JOIN orders o ON o.id = e.order_id"
                    + " WHERE o.customer_id = ANY (?)) x WHERE seq < before")) {
      ps.setArray(1, c.createArrayOf("text", keys.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** The inventory's outcome, read from the database (the source of truth), after it stopped. */
  private record InventoryFigures(
      long duplicatesDelivered,
      long duplicatesSuppressed,
      long effectsApplied,
      long duplicateEffects,
      long stockExpected,
      long stockActual) {}

  private static InventoryFigures inventoryFigures(HikariDataSource ds) throws Exception {
    long effectRows = queryLong(ds, "SELECT count(*) FROM inventory_effects");
    long effects = queryLong(ds, "SELECT count(DISTINCT message_id) FROM inventory_effects");
    return new InventoryFigures(
        // every finished delivery left one row: an effect, or a suppressed duplicate
        queryLong(
            ds,
            "SELECT count(*) - count(DISTINCT message_id) FROM (SELECT message_id FROM"
                + " inventory_effects UNION ALL SELECT message_id FROM inventory_suppressed) d"),
        queryLong(ds, "SELECT count(*) FROM inventory_suppressed"),
        effects,
        effectRows - effects,
        queryLong(
            ds,
            "SELECT (SELECT sum(initial_stock) FROM products)"
                + " - (SELECT coalesce(sum(quantity), 0) FROM orders)"),
        queryLong(ds, "SELECT sum(stock) FROM products"));
  }

  private static long queryLong(HikariDataSource ds, String sql) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * Runs the relay processes and the inventory process and restarts any that dies. The first relay
   * is armed to halt between the broker's acknowledgement and the mark at the batch given by
   * --crash-at-batch; the first inventory process is armed to halt between an effect's commit and
   * its offset commit at the delivery given by --consumer-crash-at.
   */
  private final class Supervisor {
    private final String jdbcUrl;
    private final String bootstrap;
    private final String ordersTopic;
    private final String stockTopic;
    private final String inventoryGroup;
    private final List<Member> members = new ArrayList<>();
    private final AtomicBoolean running = new AtomicBoolean();
    private int inventoryIncarnations;
    private Thread thread;

    Supervisor(
        String jdbcUrl,
        String bootstrap,
        String ordersTopic,
        String stockTopic,
        String inventoryGroup) {
      this.jdbcUrl = jdbcUrl;
      this.bootstrap = bootstrap;
      this.ordersTopic = ordersTopic;
      this.stockTopic = stockTopic;
      this.inventoryGroup = inventoryGroup;
    }

    /** A supervised process. */
    private final class Member {
      final String name;
      final boolean relay;
      final String crash; // what a halt at its crash point means
      final AtomicInteger crashes;
      final Function<Boolean, ChildJvm> launcher; // armed? -> started process
      ChildJvm jvm;

      Member(
          String name,
          boolean relay,
          String crash,
          AtomicInteger crashes,
          Function<Boolean, ChildJvm> launcher) {
        this.name = name;
        this.relay = relay;
        this.crash = crash;
        this.crashes = crashes;
        this.launcher = launcher;
      }
    }

    void start() {
      running.set(true);
      for (int i = 0; i < options.relays(); i++) {
        int index = i;
        members.add(
            new Member(
                relayId(i),
                true,
                "relay.after-ack-before-mark (acked, not marked)",
                crashes,
                armed -> launchRelay(index, armed)));
      }
      members.add(
          new Member(
              "inventory",
              false,
              "consumer.after-effect-before-offset-commit (effect committed, offset not)",
              consumerCrashes,
              this::launchInventory));
      for (Member m : members) {
        boolean armed =
            m.relay
                ? m.name.equals(relayId(0)) && options.crashAtBatch() > 0
                : options.consumerCrashAt() > 0;
        m.jvm = m.launcher.apply(armed);
      }
      for (Member m : members) {
        m.jvm.awaitLogLine("started", Duration.ofSeconds(60));
      }
      thread = Thread.ofPlatform().name("supervisor").daemon(true).start(this::watch);
    }

    private static String relayId(int i) {
      return "relay-" + (char) ('a' + i);
    }

    private ChildJvm launchRelay(int i, boolean armed) {
      String id = relayId(i);
      ChildJvm.Builder b =
          ChildJvm.builder(RelayProcess.class)
              .args(
                  jdbcUrl, bootstrap, id, "3000", "--duplicate-publish=" + ShopEvents.ORDER_CREATED)
              .jvmOptions(
                  "-Xmx256m",
                  "--enable-native-access=ALL-UNNAMED",
                  "-Dorg.slf4j.simpleLogger.log.dev.postbox=debug")
              .systemProperty(MetricsEndpoint.PORT_PROPERTY, Integer.toString(metrics.portFor(id)))
              .log(options.workDir().resolve(id + ".log"));
      if (armed) {
        b.systemProperty(
            CrashPoints.PROPERTY, "relay.after-ack-before-mark@" + options.crashAtBatch());
      }
      return b.start();
    }

    private ChildJvm launchInventory(boolean armed) {
      int incarnation = ++inventoryIncarnations;
      ChildJvm.Builder b =
          ChildJvm.builder(InventoryProcess.class)
              .args(
                  jdbcUrl,
                  bootstrap,
                  ordersTopic,
                  stockTopic,
                  inventoryGroup,
                  Integer.toString(incarnation))
              .jvmOptions(
                  "-Xmx256m",
                  "--enable-native-access=ALL-UNNAMED",
                  "-Dorg.slf4j.simpleLogger.log.dev.postbox=debug")
              .systemProperty(
                  MetricsEndpoint.PORT_PROPERTY, Integer.toString(metrics.portFor("inventory")))
              .log(options.workDir().resolve("inventory.log"));
      if (armed) {
        b.systemProperty(
            CrashPoints.PROPERTY,
            "consumer.after-effect-before-offset-commit@" + options.consumerCrashAt());
      }
      return b.start();
    }

    private void watch() {
      while (running.get()) {
        synchronized (this) {
          for (Member m : members) {
            if (!m.jvm.isAlive() && running.get()) {
              int code = m.jvm.exitCode().orElse(-1);
              if (code == CrashPoints.EXIT_CODE) {
                m.crashes.incrementAndGet();
                out.printf("%s halted at crash point %s; restarting%n", m.name, m.crash);
              } else {
                out.printf("%s exited with %d; restarting (log: %s)%n", m.name, code, m.jvm.log());
              }
              m.jvm = m.launcher.apply(false);
            }
          }
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          return;
        }
      }
    }

    /** Stops the inventory first (so that it commits its offsets), then the relays. */
    void stop() throws InterruptedException {
      if (!running.getAndSet(false)) {
        return;
      }
      if (thread != null) {
        thread.interrupt();
        thread.join();
      }
      synchronized (this) {
        List<Member> order = new ArrayList<>(members.stream().filter(m -> !m.relay).toList());
        order.addAll(members.stream().filter(m -> m.relay).toList());
        for (Member m : order) {
          if (m.jvm == null) {
            continue;
          }
          if (m.jvm.isPaused()) {
            m.jvm.resume();
          }
          m.jvm.terminate(Duration.ofSeconds(20));
        }
      }
    }
  }
}
