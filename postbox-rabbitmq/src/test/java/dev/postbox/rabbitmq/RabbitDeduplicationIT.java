package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.redis.RedisIdempotencyStore;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import dev.postbox.testkit.RedisServer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code DEDUPLICATED} on RabbitMQ with the Redis idempotency store, through the real path
 * (PostgreSQL outbox, relay, broker, the test kit's RabbitMQ node and Redis): a consumer in its own
 * JVM is halted by a crash point mid-stream while a standby of the same subscription waits behind
 * it (single active consumer), the broker hands the halted consumer's unacked deliveries to the
 * standby at once, and Redis decides what they are. Skipped with one line where RabbitMQ or Redis
 * is missing outside CI.
 */
@PostboxTest(migrate = true)
class RabbitDeduplicationIT {

  /** One shard queue: the whole stream goes through the halted consumer first. */
  static final int SHARDS = 1;

  private static final Duration WAIT = Duration.ofSeconds(120);

  private RabbitMqServer rabbit;
  private RedisServer redis;
  private RedisIdempotencyStore store;
  private final List<AutoCloseable> open = new ArrayList<>();

  @BeforeEach
  void servers() {
    rabbit = RabbitMqServer.sharedOrSkip();
    redis = RedisServer.sharedOrSkip();
    store = RedisIdempotencyStore.builder(redis.uri()).build();
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
    store.close();
  }

  /**
   * The subscription of both the child and the standby: key-ordered, one delivery at a time (so at
   * the halt exactly one handler has run to the crash point and none is half-way).
   */
  static Subscription subscription(String name, String topic, Duration lease) {
    return Subscription.builder(name)
        .topics(topic)
        .guarantee(DeliveryGuarantee.DEDUPLICATED)
        .ordering(Ordering.KEY)
        .concurrency(1)
        .idempotencyLease(lease)
        .shutdownTimeout(Duration.ofSeconds(5))
        .build();
  }

  /**
   * The consumer halts after its 40th effect and completion in Redis, before the ack: every message
   * it completed and had not acked comes back to the standby, which suppresses each as a duplicate;
   * every other message is applied by one of the two, once, in key order; nothing is lost.
   */
  @Test
  void aConsumerHaltedAfterTheCompletionBeforeTheAckLeavesOnlySuppressedDuplicates(
      PostboxTestContext ctx) throws Exception {
    int total = 200;
    Run run = new Run(ctx, Duration.ofSeconds(30));
    try (ChildJvm child =
        run.child(CrashPoints.CONSUMER_AFTER_EFFECT_BEFORE_OFFSET_COMMIT + "@40")) {
      RabbitSubscriber standby = run.standby();
      run.relayAndWrite(total);
      assertThat(child.waitFor(WAIT))
          .as("halted by the crash point")
          .contains(CrashPoints.EXIT_CODE);
      await().atMost(WAIT).until(() -> run.distinct() == total && standby.inFlight() == 0);
      long byChild = run.effects("child");
      long byStandby = run.effects("standby");
      assertThat(byChild).as("the child's effects up to its halt").isGreaterThanOrEqualTo(40);
      assertThat(run.effects())
          .as("one effect per message: none lost, none twice")
          .isEqualTo(total);
      assertThat(byChild + byStandby).isEqualTo(total);
      assertThat(standby.stats().applied()).isEqualTo(byStandby);
      assertThat(standby.stats().duplicatesSuppressed())
          .as("at least the message halted before its ack comes back and is suppressed")
          .isGreaterThanOrEqualTo(1);
      assertThat(run.duplicatesSeen.get()).isEqualTo(standby.stats().duplicatesSuppressed());
      assertThat(standby.stats().leasesExpired()).as("no lease was left behind").isZero();
      run.assertKeyOrder();
      System.out.printf(
          "RabbitDeduplicationIT halted-before-ack: %d messages, child applied %d, standby applied"
              + " %d, duplicates suppressed %d%n",
          total, byChild, byStandby, standby.stats().duplicatesSuppressed());
    }
  }

  /**
   * The consumer halts in the at-risk window (effect done, completion not written): its lease is
   * still held when the broker redelivers the message to the standby at once, so the standby waits
   * for the lease instead of running the handler in parallel, then applies the message again (the
   * documented cost of an effect outside the database, counted as an expired lease). The rest is
   * applied once.
   */
  @Test
  void aConsumerHaltedBetweenTheEffectAndTheCompletionIsWaitedForThenRepeatedOnce(
      PostboxTestContext ctx) throws Exception {
    int total = 30;
    Run run = new Run(ctx, Duration.ofSeconds(3));
    try (ChildJvm child =
        run.child(CrashPoints.CONSUMER_AFTER_EFFECT_BEFORE_IDEMPOTENCY_COMPLETE + "@10")) {
      RabbitSubscriber standby = run.standby();
      run.relayAndWrite(total);
      assertThat(child.waitFor(WAIT))
          .as("halted by the crash point")
          .contains(CrashPoints.EXIT_CODE);
      await().atMost(WAIT).until(() -> run.distinct() == total && standby.inFlight() == 0);
      assertThat(run.effects("child")).as("the child's effects up to its halt").isEqualTo(10);
      assertThat(standby.stats().leasesExpired()).as("the window is counted").isEqualTo(1);
      assertThat(run.effects()).as("the halted message's effect ran twice").isEqualTo(total + 1);
      assertThat(run.applyCounts().values().stream().filter(n -> n == 2).count()).isEqualTo(1);
      run.assertKeyOrder();
    }
  }

  /** Writes {@code d}'s effect as a row of {@code dedup_effect} by {@code worker}. */
  static void effect(Connection c, Delivery d, String worker) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO dedup_effect (message_id, msg_key, seq, worker) VALUES (?, ?, ?, ?)")) {
      ps.setObject(1, d.message().id());
      ps.setString(2, d.message().key().orElseThrow());
      ps.setLong(3, Long.parseLong(d.message().header("seq").orElseThrow()));
      ps.setString(4, worker);
      ps.executeUpdate();
    }
  }

  /** One scenario: its subscription, topic, effect table, child and standby. */
  private final class Run {
    final PostboxTestContext ctx;
    final DataSource ds;
    final String topic = "payments-" + UUID.randomUUID().toString().substring(0, 8);
    final Subscription sub;
    final AtomicInteger duplicatesSeen = new AtomicInteger();

    Run(PostboxTestContext ctx, Duration lease) throws SQLException {
      this.ctx = ctx;
      this.ds = ctx.dataSource();
      this.sub = subscription("dedup-" + UUID.randomUUID(), topic, lease);
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        // no unique constraint: an effect applied twice stays visible
        s.execute(
            "CREATE TABLE dedup_effect (n bigserial PRIMARY KEY, message_id uuid NOT NULL,"
                + " msg_key text NOT NULL, seq bigint NOT NULL, worker text NOT NULL)");
      }
    }

    /** Starts the consumer JVM with {@code crashPoint} armed; returns once it consumes. */
    ChildJvm child(String crashPoint) {
      ChildJvm child =
          ChildJvm.builder(RabbitDedupConsumerChildMain.class)
              .args(
                  rabbit.uri(),
                  redis.uri(),
                  ctx.jdbcUrl(),
                  topic,
                  sub.name(),
                  Long.toString(sub.idempotencyLease().toMillis()))
              .systemProperty(CrashPoints.PROPERTY, crashPoint)
              .start();
      child.awaitLogLine("consumer started", WAIT);
      return child;
    }

    /** The standby: subscribed after the child, so single active consumer keeps it waiting. */
    RabbitSubscriber standby() {
      RabbitSubscriber s =
          RabbitSubscriber.builder(rabbit.uri(), sub)
              .shards(SHARDS)
              .idempotencyStore(store)
              .onDuplicate((d, stored) -> duplicatesSeen.incrementAndGet())
              .handler(d -> {
                try (Connection c = ds.getConnection()) {
                  effect(c, d, "standby");
                }
              })
              .build();
      s.start();
      open.add(s);
      return s;
    }

    void relayAndWrite(int total) {
      Relay relay = RabbitEndToEndIT.startRelay(rabbit, ds);
      open.add(relay);
      RabbitEndToEndIT.write(ds, topic, 0, total, 10);
    }

    long effects() throws SQLException {
      return number("SELECT count(*) FROM dedup_effect");
    }

    long effects(String worker) throws SQLException {
      return number("SELECT count(*) FROM dedup_effect WHERE worker = '" + worker + "'");
    }

    long distinct() throws SQLException {
      return number("SELECT count(DISTINCT message_id) FROM dedup_effect");
    }

    Map<UUID, Long> applyCounts() throws SQLException {
      Map<UUID, Long> out = new LinkedHashMap<>();
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery("SELECT message_id, count(*) FROM dedup_effect GROUP BY message_id")) {
        while (rs.next()) {
          out.put(rs.getObject(1, UUID.class), rs.getLong(2));
        }
      }
      return out;
    }

    /** Per key, the sequence numbers in the order applied never go back (a repeat may equal). */
    void assertKeyOrder() throws SQLException {
      Map<String, List<Long>> byKey = new LinkedHashMap<>();
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT msg_key, seq FROM dedup_effect ORDER BY n")) {
        while (rs.next()) {
          byKey.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getLong(2));
        }
      }
      assertThat(byKey).hasSize(10);
      byKey.forEach((key, seqs) -> assertThat(seqs).as("order of " + key).isSorted());
    }

    private long number(String sql) throws SQLException {
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery(sql)) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
