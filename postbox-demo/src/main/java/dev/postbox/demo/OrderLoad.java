package dev.postbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.OutboxTransaction;
import dev.postbox.jdbc.TransactionWork;
import dev.postbox.testkit.DeliveryHistory;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

/**
 * The orders service's load: orders placed by concurrent writers (order row and {@code
 * order.created} in one transaction each) and the bulk backlog, each recorded in the delivery
 * history as committed.
 */
final class OrderLoad {

  private final int writers;
  private final int customers;
  private final int backlogEvents;
  private final DeliveryHistory history; // guarded by itself
  private final Map<UUID, Long> commitNanos = new ConcurrentHashMap<>();
  private final AtomicInteger ordersPlaced = new AtomicInteger(); // order rows committed
  private final Outbox outbox; // the orders' and the backlog's events
  private volatile Duration failoverPatience = Duration.ZERO; // 0: a failed order fails the load
  private volatile IntConsumer beforeMeasuredOrder = i -> {};

  OrderLoad(int writers, int customers, int backlog, DeliveryHistory history) {
    this(writers, customers, backlog, history, Outbox.postgres());
  }

  /** A load whose orders and backlog write their events through {@code outbox}. */
  OrderLoad(int writers, int customers, int backlog, DeliveryHistory history, Outbox outbox) {
    this.writers = writers;
    this.customers = customers;
    this.backlogEvents = backlog;
    this.history = history;
    this.outbox = outbox;
  }

  /**
   * Makes the orders survive a database failover ({@link FailoverWrites}, for up to {@code
   * patience} each) and calls {@code beforeMeasuredOrder} with each measured order's index (0, 1,
   * ...) in the writer thread about to place it, before it does ({@link ClusterFaults}).
   */
  void acrossFailover(Duration patience, IntConsumer beforeMeasuredOrder) {
    this.failoverPatience = patience;
    this.beforeMeasuredOrder = beforeMeasuredOrder;
  }

  /** The orders service: each order is one transaction writing the order row and its event. */
  void placeOrders(HikariDataSource ds, String topic, int count, boolean measured)
      throws Exception {
    placeOrders(ds, topic, count, measured, null);
  }

  /** Like above; adds the message ids to {@code ids} if not null. */
  void placeOrders(HikariDataSource ds, String topic, int count, boolean measured, Set<UUID> ids)
      throws Exception {
    AtomicInteger next = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    List<Future<?>> futures = new ArrayList<>();
    for (int w = 0; w < writers; w++) {
      long seed = 42 + w;
      futures.add(
          pool.submit(() -> {
            Random random = new Random(seed);
            int index;
            while ((index = next.getAndIncrement()) < count) {
              if (measured) {
                beforeMeasuredOrder.accept(index);
              }
              String customer = "customer-" + (1 + hotSkewed(random));
              TransactionWork<Message> order = tx -> placeOrder(tx, topic, customer, random, null);
              Message m =
                  failoverPatience.isZero()
                      ? outbox.inTransaction(ds, order)
                      : FailoverWrites.commit(outbox, ds, failoverPatience, order);
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
    int hot = Math.max(1, customers / 20);
    return random.nextInt(4) == 0 ? random.nextInt(hot) : random.nextInt(customers);
  }

  /** One order of {@code customer}, for {@code sku} or, if null, a random product. */
  static Message placeOrder(
      OutboxTransaction tx, String topic, String customer, Random random, String sku)
      throws Exception {
    Connection c = tx.connection();
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
    String product = String.format("sku-%03d", 1 + random.nextInt(ShopSchema.PRODUCTS));
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
    tx.write(m);
    return m;
  }

  /**
   * Bulk events written by one writer in one transaction (so program order is commit order, and the
   * relays see none of it before they can see all of it).
   *
   * @return {@link System#nanoTime()} just before the commit: the drain cannot start earlier
   */
  long writeBacklog(HikariDataSource ds, String topic) {
    Map<String, Long> seqs = new HashMap<>();
    List<Message> backlog = new ArrayList<>(backlogEvents);
    for (int i = 0; i < backlogEvents; i++) {
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
        outbox.inTransaction(
            ds,
            tx -> {
              outbox.writeAll(tx.connection(), backlog);
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

  /** Records a message committed outside {@link #placeOrders} (its key and seq header). */
  void committed(Message m) {
    synchronized (history) {
      history.committed(
          m.key().orElseThrow(), Long.parseLong(m.header("seq").orElseThrow()), m.id().toString());
    }
  }

  /** Events committed so far (orders, poison, backlog). */
  long committedCount() {
    synchronized (history) {
      return history.committedCount();
    }
  }

  /** Counts an order row committed outside {@link #placeOrders}. */
  void countPlaced() {
    ordersPlaced.incrementAndGet();
  }

  /** Order rows committed so far. */
  int placed() {
    return ordersPlaced.get();
  }

  /** When each measured order's transaction committed ({@link System#nanoTime()}). */
  Map<UUID, Long> commitNanos() {
    return commitNanos;
  }
}
