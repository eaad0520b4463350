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
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The seed lesson's shop on embedded infrastructure: an orders service places orders (order row +
 * {@code order.created} in the outbox, one transaction) while two relay processes publish them; a
 * consumer reads the topic. One relay is killed between the broker's acknowledgement and the mark;
 * a supervisor restarts it. The report checks that nothing is missing and per-key order held.
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
      Duration timeout,
      Path workDir) {}

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int WARMUP_ORDERS = 200;

  private final Options options;
  private final PrintStream out;
  private final DeliveryHistory history = new DeliveryHistory();
  private final List<Observation> observations = new ArrayList<>(); // guarded by itself
  private final Map<UUID, Long> commitNanos = new ConcurrentHashMap<>();
  private final Map<UUID, Long> receiveNanos = new ConcurrentHashMap<>();
  private final AtomicInteger crashes = new AtomicInteger();

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
    kafka.createTopic(topic, 6);
    try (HikariDataSource ds = pg.dataSource(schema, options.writers() + 2)) {
      PostboxMigrations.migrate(ds);
      createShopTables(ds);

      AtomicBoolean consuming = new AtomicBoolean(true);
      Thread consumer =
          Thread.ofPlatform()
              .name("shop-consumer")
              .start(() -> consume(kafka.bootstrapServers(), topic, consuming));
      Supervisor relays = new Supervisor(pg.jdbcUrl(schema), kafka.bootstrapServers());
      try {
        relays.start();

        // Warm-up: freshly started relay JVMs connect, fetch metadata and JIT-compile on their
        // first batches.
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

        // Phase 2: a backlog written while the relays are paused (SIGSTOP), then drained (relay
        // throughput).
        double relayRate = 0;
        if (options.backlog() > 0) {
          relays.pauseAll();
          writeBacklog(ds, topic);
          long p2 = System.nanoTime();
          relays.resumeAll();
          awaitConsumed(WARMUP_ORDERS + options.orders() + options.backlog());
          relayRate = options.backlog() / secondsSince(p2);
          out.printf(
              "backlog of %,d events drained at %,.0f events/s%n", options.backlog(), relayRate);
        }
        relays.stop();
        consuming.set(false);
        consumer.join();

        DeliveryHistory.Report h = checkObservations();
        double[] lat = latenciesMillis();
        boolean inconclusive = options.crashAtBatch() > 0 && crashes.get() == 0;
        boolean ok = h.ok() && !inconclusive;
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
            inconclusive && h.ok());
      } finally {
        relays.stop();
        consuming.set(false);
      }
    }
  }

  private void createShopTables(HikariDataSource ds) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE customers (id text PRIMARY KEY, orders bigint NOT NULL DEFAULT 0)");
      s.execute(
          "CREATE TABLE orders (id uuid PRIMARY KEY, customer_id text NOT NULL REFERENCES customers,"
              + " seq bigint NOT NULL, amount_cents bigint NOT NULL,"
              + " created_at timestamptz NOT NULL DEFAULT now())");
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
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO orders (id, customer_id, seq, amount_cents) VALUES (?, ?, ?, ?)")) {
      ps.setObject(1, orderId);
      ps.setString(2, customer);
      ps.setLong(3, seq);
      ps.setLong(4, amount);
      ps.executeUpdate();
    }
    Message m =
        Message.builder(topic, "order.created")
            .key(customer)
            .source("/shop/orders")
            .header("seq", Long.toString(seq))
            .jsonPayload(
                "{\"orderId\":\""
                    + orderId
                    + "\",\"customerId\":\""
                    + customer
                    + "\",\"seq\":"
                    + seq
                    + ",\"amountCents\":"
                    + amount
                    + "}")
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
   * Runs the relay processes and restarts any that dies. The first relay is armed to halt between
   * the broker's acknowledgement and the mark at the batch given by --crash-at-batch.
   */
  private final class Supervisor {
    private final String jdbcUrl;
    private final String bootstrap;
    private final List<ChildJvm> children = new ArrayList<>();
    private final AtomicBoolean running = new AtomicBoolean();
    private Thread thread;

    Supervisor(String jdbcUrl, String bootstrap) {
      this.jdbcUrl = jdbcUrl;
      this.bootstrap = bootstrap;
    }

    void start() {
      running.set(true);
      for (int i = 0; i < options.relays(); i++) {
        children.add(launch(i, i == 0 && options.crashAtBatch() > 0));
      }
      for (ChildJvm c : children) {
        c.awaitLogLine("started", Duration.ofSeconds(60));
      }
      thread = Thread.ofPlatform().name("relay-supervisor").daemon(true).start(this::watch);
    }

    private ChildJvm launch(int i, boolean armed) {
      String id = "relay-" + (char) ('a' + i);
      ChildJvm.Builder b =
          ChildJvm.builder(RelayProcess.class)
              .args(jdbcUrl, bootstrap, id, "3000")
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

    private void watch() {
      while (running.get()) {
        synchronized (this) {
          for (int i = 0; i < children.size(); i++) {
            ChildJvm c = children.get(i);
            if (!c.isAlive() && running.get()) {
              int code = c.exitCode().orElse(-1);
              if (code == CrashPoints.EXIT_CODE) {
                crashes.incrementAndGet();
                out.printf(
                    "relay-%s halted at crash point relay.after-ack-before-mark (acked, not marked); restarting%n",
                    (char) ('a' + i));
              } else {
                out.printf(
                    "relay-%s exited with %d; restarting (log: %s)%n",
                    (char) ('a' + i), code, c.log());
              }
              children.set(i, launch(i, false));
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

    synchronized void pauseAll() {
      children.forEach(ChildJvm::pause);
    }

    synchronized void resumeAll() {
      children.forEach(ChildJvm::resume);
    }

    void stop() throws InterruptedException {
      if (!running.getAndSet(false)) {
        return;
      }
      if (thread != null) {
        thread.interrupt();
        thread.join();
      }
      synchronized (this) {
        for (ChildJvm c : children) {
          if (c.isPaused()) {
            c.resume();
          }
          c.terminate(Duration.ofSeconds(20));
        }
      }
    }
  }
}
