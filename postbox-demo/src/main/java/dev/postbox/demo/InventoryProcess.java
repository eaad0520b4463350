package dev.postbox.demo;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.DependencyGuard;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.demo.ShopEvents.OrderCreated;
import dev.postbox.demo.ShopEvents.StockUpdated;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresParkingStore;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.rabbitmq.RabbitSubscriber;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * The shop's inventory service as its own OS process: consumes {@code order.created} with {@code
 * EFFECTIVELY_ONCE} and, in the inbox transaction of each order, deducts the stock ({@code stock =
 * stock - n}: not idempotent, so a second effect would show), records the effect in {@code
 * inventory_effects} (no unique constraint, so a second effect would be a second row) and writes
 * {@code stock.updated} (key: the sku) to its outbox, which the relays publish. Other event types
 * on the topic are ignored (not registered in {@link ShopEvents#TYPES}).
 *
 * <p>Every delivery that the inbox suppresses as a duplicate is recorded in {@code
 * inventory_suppressed} (autocommit) right after the inbox said so, before the delivery can finish
 * and its offset be committed; so the record survives the demo's crash between the effect commit
 * and the offset commit, which the in-memory {@code ConsumerStats} of the halted process would not.
 *
 * <p>Failure handling: a message the handler rejects for good (a {@link PermanentMessageException}
 * such as {@link UnknownProductException}, an undecodable payload, an unknown schema version) is
 * dead-lettered ({@code postbox_dead_letter}) at its first attempt and its key goes on. Orders of
 * wholesale customers ({@code wholesale-*}) also reserve stock at the warehouse, a dependency
 * behind a circuit breaker ({@link DependencyGuard}) that times out while {@code warehouse_outage}
 * says so: such an order is retried in place a few times, then parked with every later order of its
 * key ({@code postbox_parked}) and retried as a sequence after {@link #PARKING_TIERS}, in order,
 * while other keys flow on.
 *
 * <p>Arguments: JDBC URL (with the schema), Kafka bootstrap servers (or RabbitMQ's AMQP URI),
 * orders topic, stock topic, subscription (consumer group) name, incarnation number (1 for the
 * first process, then 2, 3... for restarts), and optionally the transport ({@code kafka}, the
 * default, or {@code rabbitmq}: see {@link RabbitInventory}). Runs until killed or terminated;
 * SIGTERM lets records in flight finish, commits their offsets and prints the subscription's
 * counters.
 */
public final class InventoryProcess {

  static final int CONCURRENCY = 8;

  /**
   * Delays of the parked retries: their sum (30 s) outlasts the demo's 20 s warehouse outage, so a
   * parked key drains (within 6 s of the warehouse's return) instead of being dead-lettered.
   */
  static final Duration[] PARKING_TIERS = {
    Duration.ofSeconds(2),
    Duration.ofSeconds(4),
    Duration.ofSeconds(6),
    Duration.ofSeconds(6),
    Duration.ofSeconds(6),
    Duration.ofSeconds(6)
  };

  /** The order names a product the inventory does not know: no retry can help, only a fix. */
  static final class UnknownProductException extends PermanentMessageException {
    UnknownProductException(String sku) {
      super("unknown product " + sku);
    }
  }

  private InventoryProcess() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 6 && args.length != 7) {
      System.err.println(
          "usage: InventoryProcess <jdbc-url> <bootstrap-servers|amqp-uri> <orders-topic>"
              + " <stock-topic> <subscription> <incarnation> [kafka|rabbitmq]");
      System.exit(2);
    }
    String stockTopic = args[3];
    String name = args[4];
    int incarnation = Integer.parseInt(args[5]);
    ShopTransport.Kind transport =
        args.length == 7 ? ShopTransport.Kind.of(args[6]) : ShopTransport.Kind.KAFKA;
    HikariConfig hc = new HikariConfig();
    // PostgreSQL's default, named: left to detection, a pool whose first connection meets a
    // database
    // restart keeps isolation -1 and refuses every later connection (HikariCP #1944)
    hc.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    hc.setJdbcUrl(args[0]);
    hc.setMaximumPoolSize(2 * CONCURRENCY + 2); // an inbox transaction + a warehouse call each
    hc.setPoolName("inventory-" + incarnation);
    HikariDataSource ds = new HikariDataSource(hc);
    Outbox outbox = Outbox.postgres();
    DependencyGuard guard =
        DependencyGuard.builder()
            .minimumCalls(4)
            .slidingWindowCalls(10)
            .waitInOpenState(Duration.ofSeconds(2))
            .build();
    InboxStore inbox = new RecordingInbox(PostgresInboxStore.create(ds), ds, incarnation);
    PostboxMetrics metrics = MetricsEndpoint.forChildProcess().orElse(PostboxMetrics.noop());
    AutoCloseable running;
    Supplier<Object> stats;
    if (transport == ShopTransport.Kind.RABBITMQ) {
      RabbitSubscriber subscriber =
          RabbitInventory.subscriber(
              args[1], args[2], name, ds, inbox, metrics, guard, outbox, stockTopic, incarnation);
      subscriber.start();
      running = subscriber;
      stats = subscriber::stats;
    } else {
      KafkaSubscriber subscriber =
          kafkaSubscriber(args, name, ds, inbox, metrics, guard, outbox, stockTopic, incarnation);
      subscriber.start();
      running = subscriber;
      stats = subscriber::stats;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> {
              try {
                running.close();
              } catch (Exception e) {
                System.out.println("inventory close failed: " + e);
              }
              System.out.println(
                  "inventory incarnation " + incarnation + " stopped: " + stats.get());
              ds.close();
              stopped.countDown();
            }));
    System.out.println("inventory " + name + " incarnation " + incarnation + " started");
    stopped.await(); // SIGTERM runs the hook above; a crash point halts the JVM without it
  }

  private static KafkaSubscriber kafkaSubscriber(
      String[] args,
      String name,
      HikariDataSource ds,
      InboxStore inbox,
      PostboxMetrics metrics,
      DependencyGuard guard,
      Outbox outbox,
      String stockTopic,
      int incarnation) {
    Subscription subscription =
        Subscription.builder(name)
            .topics(args[2])
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .eventTypes(ShopEvents.TYPES)
            .concurrency(CONCURRENCY)
            // a few quick in-place attempts; then a transient failure parks the key (below)
            .failureHandler(
                FailureHandlers.of(
                    RetryPolicy.builder()
                        .maxAttempts(3)
                        .backoff(new Backoff(Duration.ofMillis(200), Duration.ofSeconds(1), 2, 0.5))
                        .build()))
            .build();
    return KafkaSubscriber.builder(args[1], subscription)
        .inbox(inbox)
        // Static membership: a restarted process takes over its predecessor's partitions at
        // once, instead of waiting for the dead member's session to time out.
        .consumerProperty("group.instance.id", name + "-1")
        // a member that dies for good is noticed after 6 s (the broker's minimum), not 45 s
        .consumerProperty("session.timeout.ms", 6000)
        .deadLetters(PostgresDeadLetterStore.create(ds))
        .parking(PostgresParkingStore.create(ds))
        .parkingTiers(PARKING_TIERS)
        .metrics(metrics)
        .handler(d -> {
          OrderCreated order = d.event(OrderCreated.class);
          if (order.customerId().startsWith(WHOLESALE)) {
            guard.run("warehouse", () -> reserveAtWarehouse(ds, order));
          }
          deductStock(d, outbox, stockTopic, incarnation);
        })
        .build();
  }

  /** Customers whose orders are reserved at the warehouse first. */
  static final String WHOLESALE = "wholesale-";

  /**
   * The simulated warehouse: times out while the demo's {@code warehouse_outage} row says it is
   * down (a transient failure, counted by the circuit breaker).
   */
  static void reserveAtWarehouse(DataSource ds, OrderCreated order) throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT count(*) FROM warehouse_outage WHERE until > now()")) {
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        if (rs.getLong(1) > 0) {
          Thread.sleep(50); // a slow failure, as timeouts are
          throw new TimeoutException("warehouse timed out reserving order " + order.orderId());
        }
      }
    }
  }

  /** The effect of one order, on the inbox transaction's connection. */
  static void deductStock(Delivery delivery, Outbox outbox, String stockTopic, int incarnation)
      throws Exception {
    OrderCreated order = delivery.event(OrderCreated.class);
    Connection c = delivery.connection().orElseThrow();
    long stock;
    try (PreparedStatement ps =
        c.prepareStatement("UPDATE products SET stock = stock - ? WHERE sku = ? RETURNING stock")) {
      ps.setInt(1, order.quantity());
      ps.setString(2, order.sku());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new UnknownProductException(order.sku());
        }
        stock = rs.getLong(1);
      }
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO inventory_effects (message_id, order_id, sku, quantity, incarnation)"
                + " VALUES (?, ?, ?, ?, ?)")) {
      ps.setObject(1, delivery.message().id());
      ps.setObject(2, order.orderId());
      ps.setString(3, order.sku());
      ps.setInt(4, order.quantity());
      ps.setInt(5, incarnation);
      ps.executeUpdate();
    }
    outbox.write(
        c,
        ShopEvents.TYPES
            .newMessage(
                stockTopic,
                new StockUpdated(order.sku(), -order.quantity(), stock, order.orderId()))
            .key(order.sku())
            .source("/shop/inventory")
            .causedBy(delivery.message())
            .build());
  }

  /**
   * The PostgreSQL inbox, plus a row in {@code inventory_suppressed} for every delivery it
   * suppresses as a duplicate.
   */
  static final class RecordingInbox implements InboxStore {
    private final InboxStore inbox;
    private final DataSource dataSource;
    private final int incarnation;

    RecordingInbox(InboxStore inbox, DataSource dataSource, int incarnation) {
      this.inbox = inbox;
      this.dataSource = dataSource;
      this.incarnation = incarnation;
    }

    @Override
    public boolean processOnce(String consumer, UUID messageId, Work work) throws Exception {
      boolean fresh = inbox.processOnce(consumer, messageId, work);
      if (!fresh) {
        recordSuppressed(List.of(messageId));
      }
      return fresh;
    }

    @Override
    public Set<UUID> processBatch(String consumer, List<UUID> messageIds, BatchWork work)
        throws Exception {
      Set<UUID> fresh = inbox.processBatch(consumer, messageIds, work);
      Set<UUID> unclaimed = new HashSet<>(fresh);
      recordSuppressed(messageIds.stream().filter(id -> !unclaimed.remove(id)).toList());
      return fresh;
    }

    @Override
    public boolean advanceVersion(Connection connection, String entity, long version)
        throws Exception {
      return inbox.advanceVersion(connection, entity, version);
    }

    @Override
    public int purge(String consumer, Duration age, int limit) {
      return inbox.purge(consumer, age, limit);
    }

    private void recordSuppressed(List<UUID> ids) throws Exception {
      if (ids.isEmpty()) {
        return;
      }
      try (Connection c = dataSource.getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO inventory_suppressed (message_id, incarnation) VALUES (?, ?)")) {
        for (UUID id : ids) {
          ps.setObject(1, id);
          ps.setInt(2, incarnation);
          ps.addBatch();
        }
        ps.executeBatch();
      }
    }
  }
}
