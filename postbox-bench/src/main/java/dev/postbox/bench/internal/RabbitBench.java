package dev.postbox.bench.internal;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.rabbitmq.RabbitMessages;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import dev.postbox.rabbitmq.RabbitSubscriber;
import dev.postbox.rabbitmq.RabbitTopology;
import dev.postbox.testkit.RabbitMqServer;
import java.io.PrintStream;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.springframework.amqp.core.MessageListener;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.api.ChannelAwareBatchMessageListener;

/**
 * {@code ./postbox bench --only rabbitmq}: RabbitMQ side by side, on a private node (this machine's
 * {@code rabbitmq-server}) or {@value RabbitMqServer#URL_ENV}, each figure the median of {@value
 * #RUNS} runs after a warm-up run, with the spread ((max - min) / median) in its note.
 *
 * <ul>
 *   <li>the relay (one instance, PostgreSQL outbox, {@link RabbitRelayPublisher}: persistent,
 *       mandatory, publisher confirms awaited per batch, the next batch claimed and published
 *       behind the one that waits for its confirms, so two batches are unconfirmed) against the raw
 *       publisher with the same confirm mode: the same messages (properties and body from {@link
 *       RabbitMessages}), mandatory and persistent, on one confirm channel with asynchronous
 *       confirms and the same number of unconfirmed messages (two relay batches) in flight, no
 *       database;
 *   <li>the {@code EFFECTIVELY_ONCE} consumer ({@link RabbitSubscriber}: inbox row and effect in
 *       one transaction per message; and in batches of 100, one transaction per batch) against
 *       Spring AMQP's {@link SimpleMessageListenerContainer}, one per shard queue (their single
 *       active consumer lets one consumer per queue work), with the same one-row JDBC effect: as a
 *       batch listener with one JDBC transaction per batch of 100 (its best), and per message in
 *       auto-commit;
 *   <li>key-ordered concurrency: one queue, 1,000 keys, a handler that waits 5 ms, with {@code
 *       Ordering.KEY} against one message at a time per queue ({@code Ordering.PARTITION}, what one
 *       plain consumer per queue does).
 *   <li>instances sharing the shards by lease: key-ordered throughput with 1, 2 and 4 instances
 *       beside Spring AMQP's competing consumers ({@link RabbitScaling}), and how long the shards
 *       of an instance that is killed, joins or leaves go unconsumed ({@link RabbitHandover}).
 * </ul>
 */
public final class RabbitBench {

  static final int RUNS = 3;
  static final int SHARDS = RabbitBest.SHARDS;
  private static final String INSERT_EFFECT = "INSERT INTO bench_effect VALUES (?, ?, ?)";
  private static final AtomicInteger SEQ = new AtomicInteger();

  private final BenchEnv env;
  private final BenchConfig config;
  private final PrintStream log;
  private RabbitMqServer server;
  private String uri;

  public RabbitBench(BenchEnv env, BenchConfig config, PrintStream log) {
    this.env = env;
    this.config = config;
    this.log = log;
  }

  /** Runs every figure; empty when no RabbitMQ is available (one line says so). */
  public List<Measurement> run() throws Exception {
    Optional<String> unavailable = RabbitNode.unavailable();
    if (unavailable.isPresent()) {
      log.println("rabbitmq: skipped: " + unavailable.get());
      return List.of();
    }
    server = RabbitNode.start();
    uri = server.uri();
    try {
      List<Measurement> out = new ArrayList<>();
      // the raw publisher and both relays take turns, so a drifting load weighs on all three
      List<Measurement> publish =
          Repeated.interleaved(
              List.of(
                  "rabbit_raw_publisher_confirms_per_s",
                  "rabbit_relay_1_instance_events_per_s",
                  "rabbit_relay_not_pipelined_events_per_s"),
              "events/s",
              RUNS,
              List.of(this::rawOnce, r -> relayOnce(r, true), r -> relayOnce(r, false)));
      Measurement raw = record(out, publish.get(0));
      Measurement relay = record(out, publish.get(1));
      record(
          out,
          Measurement.of("rabbit_relay_vs_raw_publisher", relay.value() / raw.value(), "x")
              .target(Target.atLeast(0.8))
              .note("rabbit_relay_1_instance_events_per_s / rabbit_raw_publisher_confirms_per_s"));
      Measurement oneBatch = record(out, publish.get(2));
      record(
          out,
          Measurement.of(
                  "rabbit_relay_pipelined_vs_not_pipelined", relay.value() / oneBatch.value(), "x")
              .note(
                  "rabbit_relay_1_instance_events_per_s / rabbit_relay_not_pipelined_events_per_s"
                      + " (one batch unconfirmed at a time, as before ordered pipelining)"));
      Measurement eo = record(out, median("rabbit_consumer_eo_per_s", r -> eoOnce(r, false)));
      Measurement eoBatch =
          record(out, median("rabbit_consumer_eo_batch_per_s", r -> eoOnce(r, true)));
      Measurement ours = eoBatch.value() >= eo.value() ? eoBatch : eo;
      Measurement springBatch =
          record(out, median("spring_rabbit_batch_tx_jdbc_per_s", r -> springOnce(r, true)));
      Measurement springSingle =
          record(out, median("spring_rabbit_per_message_jdbc_per_s", r -> springOnce(r, false)));
      Measurement best = springBatch.value() >= springSingle.value() ? springBatch : springSingle;
      record(
          out,
          Measurement.of("rabbit_consumer_eo_vs_best_spring", ours.value() / best.value(), "x")
              .target(Target.atLeast(1.5))
              .note(ours.name() + " (our better figure) / " + best.name() + " (Spring's best)"));
      Measurement partition =
          record(
              out,
              median("rabbit_key_order_queue_per_s", r -> keyOrderOnce(r, Ordering.PARTITION)));
      Measurement key =
          record(out, median("rabbit_key_order_key_per_s", r -> keyOrderOnce(r, Ordering.KEY)));
      record(
          out,
          Measurement.of("rabbit_key_order_vs_queue", key.value() / partition.value(), "x")
              .target(Target.atLeast(50))
              .note("rabbit_key_order_key_per_s / rabbit_key_order_queue_per_s"));
      RabbitWork work = new RabbitWork(uri);
      for (Measurement m : new RabbitScaling(env, config, work).run()) {
        record(out, m);
      }
      for (Measurement m : new RabbitHandover(env, config, work).run()) {
        record(out, m);
      }
      return out;
    } finally {
      RabbitNode.release(server);
    }
  }

  private Measurement record(List<Measurement> out, Measurement m) {
    out.add(m);
    log.printf("  %-42s %,.1f %s%n", m.name(), m.value(), m.unit());
    return m;
  }

  /** A warm-up run, then the median of {@link #RUNS} runs, with their spread in the note. */
  private static Measurement median(String name, Repeated.Once once) throws Exception {
    String unit = name.contains("relay") || name.contains("publisher") ? "events/s" : "msgs/s";
    return Repeated.median(name, unit, RUNS, once);
  }

  private Connection connect(String name) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(uri);
    return f.newConnection(name);
  }

  /** A new topic (exchange) with the shard queues of {@code subscription}, unique in this run. */
  private String topic(String prefix, String subscription, int shards) throws Exception {
    String topic =
        "bench." + prefix + "." + ProcessHandle.current().pid() + "." + SEQ.incrementAndGet();
    try (Connection c = connect("bench-setup");
        Channel ch = c.createChannel()) {
      RabbitTopology.declareShards(ch, subscription, topic, shards);
    }
    return topic;
  }

  private void deleteQueues(String subscription, String topic, int shards) throws Exception {
    try (Connection c = connect("bench-cleanup");
        Channel ch = c.createChannel()) {
      for (int i = 0; i < shards; i++) {
        ch.queueDelete(RabbitTopology.queue(subscription, topic, i));
      }
      ch.exchangeDelete(RabbitTopology.exchange(topic));
    }
  }

  private int relayEvents() {
    return Math.max(5_000, config.relayEvents() / 2);
  }

  /** The raw publisher: the relay's messages, mandatory, persistent, async confirms. */
  private Repeated.Run rawOnce(int round) throws Exception {
    int n = relayEvents();
    String topic = topic("raw", "sink", SHARDS);
    List<Message> messages = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      messages.add(BenchEnv.message(topic, i));
    }
    int window = 2 * Relay.DEFAULT_BATCH_SIZE;
    Semaphore inFlight = new Semaphore(window);
    AtomicLong confirmed = new AtomicLong();
    try (Connection c = connect("bench-raw")) {
      Channel ch = c.createChannel();
      ch.confirmSelect();
      // outstanding publish sequence numbers: a broker may ack one number singly and later ack a
      // range around it with multiple=true, so count what each ack settles, never a difference
      java.util.NavigableSet<Long> unconfirmed = new java.util.TreeSet<>();
      ch.addConfirmListener(
          new ConfirmListener() {
            @Override
            public void handleAck(long seq, boolean multiple) {
              settle(seq, multiple);
            }

            @Override
            public void handleNack(long seq, boolean multiple) {
              settle(seq, multiple);
            }

            private void settle(long seq, boolean multiple) {
              int count;
              synchronized (unconfirmed) {
                if (multiple) {
                  java.util.NavigableSet<Long> settled = unconfirmed.headSet(seq, true);
                  count = settled.size();
                  settled.clear();
                } else {
                  count = unconfirmed.remove(seq) ? 1 : 0;
                }
              }
              confirmed.addAndGet(count);
              inFlight.release(count);
            }
          });
      long t0 = System.nanoTime();
      for (Message m : messages) {
        inFlight.acquire();
        synchronized (unconfirmed) {
          unconfirmed.add(ch.getNextPublishSeqNo());
        }
        ch.basicPublish(
            RabbitTopology.exchange(topic),
            RabbitMessages.routingKey(m),
            true,
            RabbitMessages.toProperties(m),
            m.payload().bytes());
      }
      BenchEnv.awaitCount("raw confirms", confirmed::get, n, Duration.ofSeconds(60));
      double rate = Rate.since(t0, n);
      return new Repeated.Run(
          rate,
          n
              + " messages of "
              + BenchEnv.PAYLOAD_BYTES
              + " bytes, persistent, mandatory, async confirms, "
              + window
              + " unconfirmed at most, "
              + SHARDS
              + " quorum queues");
    } finally {
      deleteQueues("sink", topic, SHARDS);
    }
  }

  /**
   * The relay: n outbox rows drained, published with confirms, deleted (retention 0); {@code
   * pipelined}: the publisher's ordered pipelining on (two batches unconfirmed) or hidden (one).
   */
  private Repeated.Run relayOnce(int round, boolean pipelined) throws Exception {
    int n = relayEvents();
    Db db = env.database("rabbit_relay", 4);
    String topic = topic("relay", "sink", SHARDS);
    BenchEnv.seedOutbox(db, topic, n);
    Relay relay =
        Relay.builder(
                PostgresRelayStore.create(db.dataSource()),
                pipelined
                    ? RabbitRelayPublisher.builder(uri).build()
                    : new NotPipelined(RabbitRelayPublisher.builder(uri).build()))
            .instanceId("bench-rabbit-relay")
            .retention(Duration.ZERO)
            .build();
    long t0 = System.nanoTime();
    relay.start();
    try {
      BenchEnv.awaitCount(
          "rabbit relay", () -> relay.stats().published(), n, Duration.ofSeconds(60));
      return new Repeated.Run(
          Rate.since(t0, n),
          n
              + " outbox rows drained, published with confirms (mandatory) and deleted, 1 instance, "
              + (pipelined ? "2 batches" : "1 batch")
              + " unconfirmed at most");
    } finally {
      relay.close();
      deleteQueues("sink", topic, SHARDS);
      db.dataSource().close();
    }
  }

  private int consumerEvents() {
    return Math.max(2_000, config.consumerEvents() / 2);
  }

  /** A topic whose {@code subscription} queues hold {@code n} benchmark messages (not timed). */
  private String filled(String prefix, String subscription, int shards, int n) throws Exception {
    String topic = topic(prefix, subscription, shards);
    try (Connection c = connect("bench-fill")) {
      Channel ch = c.createChannel();
      ch.confirmSelect();
      for (int i = 0; i < n; i++) {
        Message m = BenchEnv.message(topic, i);
        ch.basicPublish(
            RabbitTopology.exchange(topic),
            RabbitMessages.routingKey(m),
            true,
            RabbitMessages.toProperties(m),
            m.payload().bytes());
        if (i % 1000 == 999) {
          ch.waitForConfirmsOrDie(60_000);
        }
      }
      ch.waitForConfirmsOrDie(60_000);
    }
    return topic;
  }

  /**
   * Ours: EFFECTIVELY_ONCE, inbox row + effect in one transaction per message; with {@code batch},
   * batches of 100 (inbox rows + the effects, one JDBC batch) in one transaction per batch, the
   * same effect as Spring's batch listener.
   */
  private Repeated.Run eoOnce(int round, boolean batch) throws Exception {
    int n = consumerEvents();
    Db db = env.database("rabbit_eo", 40);
    String name = "bench-eo-" + SEQ.incrementAndGet();
    String topic = filled("eo", name, SHARDS, n);
    Subscription s = RabbitBest.eoSubscription(name, topic, batch);
    DataSource ds = db.dataSource();
    RabbitSubscriber.Builder b =
        RabbitSubscriber.builder(uri, s)
            .shards(SHARDS)
            .prefetch(RabbitBest.PREFETCH)
            .inbox(PostgresInboxStore.create(ds));
    if (batch) {
      b.batchHandler(RabbitBest.effects("eo-batch"));
    } else {
      b.handler(d -> {
        try (PreparedStatement ps = d.connection().orElseThrow().prepareStatement(INSERT_EFFECT)) {
          ps.setString(1, "eo");
          ps.setObject(2, d.message().id());
          ps.setString(3, d.message().key().orElse(null));
          ps.executeUpdate();
        }
      });
    }
    try (RabbitSubscriber sub = b.build()) {
      long t0 = System.nanoTime();
      sub.start();
      BenchEnv.awaitCount(
          "rabbit eo",
          () -> sub.stats().applied() + sub.stats().duplicatesSuppressed(),
          n,
          Duration.ofSeconds(60));
      return new Repeated.Run(
          Rate.since(t0, n),
          n
              + " messages on "
              + SHARDS
              + (batch
                  ? " shard queues, batches of 100 per shard queue, prefetch 250, inbox rows +"
                      + " effects in one transaction per batch"
                  : " shard queues, concurrency 32 (key order), prefetch 250, inbox + effect in"
                      + " one transaction per message"));
    } finally {
      deleteQueues(name, topic, SHARDS);
      db.dataSource().close(); // 40 connections a run: 300 is the server's limit
    }
  }

  /**
   * Spring AMQP: one {@link SimpleMessageListenerContainer} per shard queue, prefetch 250; with
   * {@code batch}, a batch listener (batches of 100) with one JDBC transaction per batch, else one
   * auto-commit INSERT per message. Acks after the listener returned (AUTO).
   */
  private Repeated.Run springOnce(int round, boolean batch) throws Exception {
    int n = consumerEvents();
    Db db = env.database("rabbit_spring", 40);
    String name = "bench-spring-" + SEQ.incrementAndGet();
    String topic = filled("spring", name, SHARDS, n);
    DataSource ds = db.dataSource();
    AtomicLong applied = new AtomicLong();
    CachingConnectionFactory cf = new CachingConnectionFactory(java.net.URI.create(uri));
    List<SimpleMessageListenerContainer> containers = new ArrayList<>();
    try {
      for (int i = 0; i < SHARDS; i++) {
        String queue = RabbitTopology.queue(name, topic, i);
        SimpleMessageListenerContainer c;
        if (batch) {
          c = RabbitBest.springBatch(cf, queue);
          c.setMessageListener(
              (ChannelAwareBatchMessageListener)
                  (messages, channel) -> {
                    try (java.sql.Connection conn = ds.getConnection()) {
                      conn.setAutoCommit(false);
                      try (PreparedStatement ps = conn.prepareStatement(INSERT_EFFECT)) {
                        for (org.springframework.amqp.core.Message m : messages) {
                          bind(ps, "spring-batch", m);
                          ps.addBatch();
                        }
                        ps.executeBatch();
                      }
                      conn.commit();
                    } catch (java.sql.SQLException e) {
                      throw new IllegalStateException(e); // the container rejects the batch
                    }
                    applied.addAndGet(messages.size());
                  });
        } else {
          c = new SimpleMessageListenerContainer(cf);
          c.setQueueNames(queue);
          c.setConcurrentConsumers(1);
          c.setPrefetchCount(RabbitBest.PREFETCH);
          c.setMessageListener(
              (MessageListener)
                  m -> {
                    try (java.sql.Connection conn = ds.getConnection();
                        PreparedStatement ps = conn.prepareStatement(INSERT_EFFECT)) {
                      bind(ps, "spring", m);
                      ps.executeUpdate();
                    } catch (java.sql.SQLException e) {
                      throw new IllegalStateException(e);
                    }
                    applied.incrementAndGet();
                  });
        }
        containers.add(c);
      }
      long t0 = System.nanoTime();
      containers.forEach(SimpleMessageListenerContainer::start);
      BenchEnv.awaitCount("spring rabbit", applied::get, n, Duration.ofSeconds(60));
      return new Repeated.Run(
          Rate.since(t0, n),
          n
              + " messages, SimpleMessageListenerContainer per shard queue ("
              + SHARDS
              + "), prefetch 250, "
              + (batch
                  ? "batch listener (100) with one JDBC transaction per batch"
                  : "one auto-commit INSERT per message"));
    } finally {
      containers.forEach(SimpleMessageListenerContainer::stop);
      cf.destroy();
      deleteQueues(name, topic, SHARDS);
      db.dataSource().close(); // 40 connections a run: 300 is the server's limit
    }
  }

  private static void bind(
      PreparedStatement ps, String consumer, org.springframework.amqp.core.Message m)
      throws java.sql.SQLException {
    ps.setString(1, consumer);
    ps.setObject(2, UUID.fromString(m.getMessageProperties().getMessageId()));
    Object key = m.getMessageProperties().getHeaders().get(RabbitMessages.CE_PARTITIONKEY);
    ps.setString(3, key == null ? null : key.toString());
  }

  /** One queue, 1,000 keys, 5 ms per message, {@code ordering}, concurrency 1,000. */
  private Repeated.Run keyOrderOnce(int round, Ordering ordering) throws Exception {
    int n =
        ordering == Ordering.PARTITION ? config.keyOrderPartitionEvents() : config.keyOrderEvents();
    String name = "bench-keys-" + SEQ.incrementAndGet();
    String topic = filled("keys", name, 1, n);
    Subscription s =
        Subscription.builder(name)
            .topics(topic)
            .ordering(ordering)
            .concurrency(1_000)
            .maxInFlight(5_000)
            .build();
    try (RabbitSubscriber sub =
        RabbitSubscriber.builder(uri, s)
            .shards(1)
            .prefetch(5_000)
            .handler(d -> Thread.sleep(5))
            .build()) {
      long t0 = System.nanoTime();
      sub.start();
      BenchEnv.awaitCount("rabbit keys", () -> sub.stats().applied(), n, Duration.ofSeconds(60));
      return new Repeated.Run(
          Rate.since(t0, n),
          n + " messages, 1 queue, 1,000 keys, 5 ms sleep each, prefetch 5,000, " + ordering);
    } finally {
      deleteQueues(name, topic, 1);
    }
  }
}
