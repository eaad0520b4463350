package dev.postbox.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
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
      Path workDir) {}

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int WARMUP_ORDERS = 200;
  private static final int PRODUCTS = 50;
  private static final long INITIAL_STOCK = 10_000;

  private final Options options;
  private final PrintStream out;
  private final DeliveryHistory history = new DeliveryHistory();
  private final List<Observation> observations = new ArrayList<>(); // guarded by itself
  private final Map<UUID, Long> commitNanos = new ConcurrentHashMap<>();
  private final Map<UUID, Long> receiveNanos = new ConcurrentHashMap<>();
  private final AtomicInteger crashes = new AtomicInteger();
  private final AtomicInteger consumerCrashes = new AtomicInteger();

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
        awaitInventory(ds, kafka.bootstrapServers(), inventory, topic, "caught up");

        // Phase 2: a backlog written while the relays are paused (SIGSTOP), then drained (relay
        // throughput).
        double relayRate = 0;
        if (options.backlog() > 0) {
          supervisor.pauseRelays();
          writeBacklog(ds, topic);
          long p2 = System.nanoTime();
          supervisor.resumeRelays();
          awaitConsumed(WARMUP_ORDERS + options.orders() + options.backlog());
          relayRate = options.backlog() / secondsSince(p2);
          out.printf(
              "backlog of %,d events drained at %,.0f events/s%n", options.backlog(), relayRate);
        }
        // The backlog's events are not for the inventory (it skips their type); let it read them.
        awaitInventory(ds, kafka.bootstrapServers(), inventory, topic, "done");
        supervisor.stop(); // the inventory first (SIGTERM: it commits its offsets), then the relays
        consuming.set(false);
        consumer.join();

        DeliveryHistory.Report h = checkObservations();
        InventoryFigures inv = inventoryFigures(ds);
        double[] lat = latenciesMillis();
        long orders = WARMUP_ORDERS + options.orders();
        boolean inconclusive =
            (options.crashAtBatch() > 0 && crashes.get() == 0)
                || (options.consumerCrashAt() > 0 && consumerCrashes.get() == 0);
        boolean invariants =
            h.ok()
                && inv.effectsApplied() == orders
                && inv.duplicateEffects() == 0
                && inv.stockActual() == inv.stockExpected()
                && inv.duplicatesSuppressed() > 0;
        boolean ok = invariants && !inconclusive;
        return new DemoReport(
            WARMUP_ORDERS + options.orders(),
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
            inv.stockActual());
      } finally {
        supervisor.stop();
        consuming.set(false);
      }
    }
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
              + " sku text NOT NULL REFERENCES products, quantity int NOT NULL,"
              + " created_at timestamptz NOT NULL DEFAULT now())");
      // The inventory's audit of its effects: deliberately no unique constraint, so that a second
      // effect of one message would be a second row (counted as a duplicate effect).
      s.execute(
          "CREATE TABLE inventory_effects (message_id uuid NOT NULL, order_id uuid NOT NULL,"
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
    }
  }

  /** The orders service: each order is one transaction writing the order row and its event. */
  private void placeOrders(HikariDataSource ds, String topic, int count, boolean measured)
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
                      ds, tx -> placeOrder(tx.connection(), outbox, topic, customer, random));
              long seq = Long.parseLong(m.header("seq").orElseThrow());
              if (measured) {
                commitNanos.put(m.id(), System.nanoTime());
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

  private static Message placeOrder(
      Connection c, Outbox outbox, String topic, String customer, Random random) throws Exception {
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
    String sku = String.format("sku-%03d", 1 + random.nextInt(PRODUCTS));
    int quantity = 1 + random.nextInt(5);
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO orders (id, customer_id, seq, amount_cents, sku, quantity)"
                + " VALUES (?, ?, ?, ?, ?, ?)")) {
      ps.setObject(1, orderId);
      ps.setString(2, customer);
      ps.setLong(3, seq);
      ps.setLong(4, amount);
      ps.setString(5, sku);
      ps.setInt(6, quantity);
      ps.executeUpdate();
    }
    Message m =
        ShopEvents.TYPES
            .newMessage(
                topic, new ShopEvents.OrderCreated(orderId, customer, seq, amount, sku, quantity))
            .key(customer)
            .source("/shop/orders")
            .header("seq", Long.toString(seq))
            .build();
    outbox.write(c, m);
    return m;
  }

  /**
   * Bulk events written in transactions of 200 by one writer (so program order is commit order).
   */
  private void writeBacklog(HikariDataSource ds, String topic) {
    Outbox outbox = Outbox.postgres();
    Map<String, Long> seqs = new HashMap<>();
    int written = 0;
    while (written < options.backlog()) {
      int n = Math.min(200, options.backlog() - written);
      List<Message> batch = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        String key = "bulk-" + ((written + i) % 500);
        long seq = seqs.merge(key, 1L, Long::sum);
        batch.add(
            Message.builder(topic, "order.imported")
                .key(key)
                .source("/shop/import")
                .header("seq", Long.toString(seq))
                .jsonPayload("{\"key\":\"" + key + "\",\"seq\":" + seq + "}")
                .build());
      }
      outbox.inTransaction(
          ds,
          tx -> {
            tx.writeAll(batch);
            return null;
          });
      synchronized (history) {
        for (Message m : batch) {
          history.committed(
              m.key().orElseThrow(),
              Long.parseLong(m.header("seq").orElseThrow()),
              m.id().toString());
        }
      }
      written += n;
    }
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
          JsonNode body = JSON.readTree(m.payload().unsafeBytes());
          receiveNanos.putIfAbsent(m.id(), now);
          synchronized (observations) {
            observations.add(
                new Observation(
                    m.key().orElseThrow(), body.get("seq").asLong(), m.id().toString()));
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
      HikariDataSource ds, String bootstrap, String group, String topic, String what)
      throws Exception {
    long orders = WARMUP_ORDERS + options.orders();
    long deadline = System.nanoTime() + options.timeout().toNanos();
    long effects = 0;
    long lag = -1;
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    long t0 = System.nanoTime();
    try (Admin admin = Admin.create(p)) {
      while (System.nanoTime() < deadline) {
        effects = queryLong(ds, "SELECT count(DISTINCT message_id) FROM inventory_effects");
        if (effects >= orders && unpublished(ds, topic) == 0) {
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

    synchronized void pauseRelays() {
      members.stream().filter(m -> m.relay).forEach(m -> m.jvm.pause());
    }

    synchronized void resumeRelays() {
      members.stream().filter(m -> m.relay).forEach(m -> m.jvm.resume());
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
