package dev.postbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.engine.TransportBinding;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import io.opentelemetry.api.OpenTelemetry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The commit-time membership check on the Kafka side, through the engine on PostgreSQL: a record
 * that passed the start check, then sat through a pause longer than the fence's threshold (the fake
 * clock jumps inside the handler) while its partition went to another member, has its effect and
 * inbox row rolled back and stays unfinished, so the successor applies it exactly once; the same
 * pause with the membership proven afterwards (the poll thread's broker-checked commit) commits.
 * The ownership is the one the dispatcher gives its workers ({@link RecordDispatcher#ownership}).
 */
@PostboxTest
class CommitTimeFenceIT {

  private static final TransportBinding TRANSPORT =
      new TransportBinding("test-bus", "messaging.test-bus.offset", t -> false);
  private static final Duration THRESHOLD = Duration.ofSeconds(8);

  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private final MembershipFence fence = new MembershipFence("fence-it", THRESHOLD, now::get);
  private final AtomicBoolean revoked = new AtomicBoolean();

  /** The handler: the effect, then (when asked) the pause and what happened during it. */
  private Runnable duringThePause = () -> {};

  @Test
  void aRecordWhosePartitionWentElsewhereDuringAPauseIsRolledBackAndAppliedOnceBySuccessor(
      PostboxTestContext ctx) throws Exception {
    DataSource ds = prepare(ctx);
    Message m = message();
    fence.polled();
    duringThePause =
        () -> {
          now.addAndGet(THRESHOLD.plusSeconds(1).toNanos()); // stopped longer than the threshold
          revoked.set(true); // and the group gave the partition to another member meanwhile
        };
    DeliveryProcessor zombie = processor(ds, "zombie");
    boolean finished = zombie.process(incoming(m), owned());
    assertThat(finished).as("the record stays unfinished here").isFalse();
    assertThat(effects(ds)).as("the zombie's effect was rolled back").isZero();
    assertThat(inboxRows(ds)).as("and its inbox row with it").isZero();

    // the successor (a fresh member, nothing revoked) applies it once
    duringThePause = () -> {};
    revoked.set(false);
    fence.polled();
    fence.verified();
    assertThat(processor(ds, "successor").process(incoming(m), owned())).isTrue();
    assertThat(effectsBy(ds, "successor")).isEqualTo(1);
    assertThat(effects(ds)).isEqualTo(1);
  }

  @Test
  void thePauseWithTheMembershipProvenAfterwardsCommits(PostboxTestContext ctx) throws Exception {
    DataSource ds = prepare(ctx);
    fence.polled();
    duringThePause =
        () -> {
          now.addAndGet(THRESHOLD.plusSeconds(1).toNanos());
          // the poll thread returns, sees the gap, and proves the membership with a commit
          assertThat(fence.polled()).as("the gap is seen").isTrue();
          fence.verified();
        };
    assertThat(processor(ds, "member").process(incoming(message()), owned())).isTrue();
    assertThat(effectsBy(ds, "member")).isEqualTo(1);
  }

  private BooleanSupplier owned() {
    return RecordDispatcher.ownership(
        DeliveryGuarantee.EFFECTIVELY_ONCE, fence, () -> false, revoked::get);
  }

  private DeliveryProcessor processor(DataSource ds, String instance) {
    return DeliveryProcessor.builder(
            TRANSPORT,
            Subscription.builder("fence-it")
                .topics("orders")
                .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                .build())
        .handler(d -> apply(d, instance))
        .inbox(Optional.of(PostgresInboxStore.create(ds)))
        .time(Clock.systemUTC(), Ticker.SYSTEM, Sleeper.SYSTEM)
        .metrics(PostboxMetrics.noop())
        .openTelemetry(OpenTelemetry.noop())
        .build();
  }

  private void apply(Delivery d, String instance) throws SQLException {
    try (PreparedStatement ps =
        d.connection()
            .orElseThrow()
            .prepareStatement("INSERT INTO fence_effect (message_id, instance) VALUES (?, ?)")) {
      ps.setObject(1, d.message().id());
      ps.setString(2, instance);
      ps.executeUpdate();
    }
    duringThePause.run();
  }

  private static Message message() {
    return Message.builder("orders", "order.created").key("k").jsonPayload("{}").build();
  }

  private static Incoming incoming(Message m) {
    return new Incoming("orders", 0, 7, () -> m, null, m.payload().bytes(), List.of());
  }

  private static DataSource prepare(PostboxTestContext ctx) throws SQLException {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE fence_effect (message_id uuid NOT NULL, instance text NOT NULL)");
    }
    return ds;
  }

  private static long effects(DataSource ds) throws SQLException {
    return count(ds, "SELECT count(*) FROM fence_effect");
  }

  private static long effectsBy(DataSource ds, String instance) throws SQLException {
    return count(ds, "SELECT count(*) FROM fence_effect WHERE instance = '" + instance + "'");
  }

  private static long inboxRows(DataSource ds) throws SQLException {
    return count(ds, "SELECT count(*) FROM postbox_inbox");
  }

  private static long count(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
