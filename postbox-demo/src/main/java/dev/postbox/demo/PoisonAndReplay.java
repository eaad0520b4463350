package dev.postbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.Replayer;
import dev.postbox.kafka.KafkaDeadLetters;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The demo's failures and their repair: the warehouse outage with the wholesale customers' orders
 * (parked, watched), the poison messages (malformed JSON, an unknown schema version, orders of a
 * product the inventory does not know), and the fix with the replay of the fixable dead letters.
 */
final class PoisonAndReplay {

  static final int WHOLESALE_ORDERS = 30; // spread over the wholesale customers, 3 s
  static final int MALFORMED = 2;
  static final int UNKNOWN_VERSION = 2;
  static final int UNKNOWN_PRODUCT = 3;
  static final String NEW_SKU = "sku-900"; // ordered before the inventory knows it

  private final PrintStream out;
  private final int orders;
  private final int outageSeconds;
  private final OrderLoad load;
  private final Set<String> parkedKeys = ConcurrentHashMap.newKeySet();

  private final ShopTransport transport;

  PoisonAndReplay(PrintStream out, int orders, int outageSeconds, OrderLoad load) {
    this(out, orders, outageSeconds, load, null);
  }

  /** On {@code transport} (null: Kafka's dead-letter decoder and parked keys). */
  PoisonAndReplay(
      PrintStream out, int orders, int outageSeconds, OrderLoad load, ShopTransport transport) {
    this.transport = transport;
    this.out = out;
    this.orders = orders;
    this.outageSeconds = outageSeconds;
    this.load = load;
  }

  /**
   * Waits until the other customers' orders placed during the outage are applied (they flow on
   * while the wholesale keys are parked), so that the backlog below does not compete with them.
   */
  void awaitOthers(HikariDataSource ds, Set<UUID> others, long outageStart, Duration timeout)
      throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    long applied = 0;
    while (System.nanoTime() < deadline
        && (applied = ShopAudit.applied(ds, others)) < others.size()) {
      Thread.sleep(100);
    }
    out.printf(
        "other customers' orders placed meanwhile: %,d of %,d applied %.1f s into the outage%n",
        applied, others.size(), (System.nanoTime() - outageStart) / 1e9);
  }

  /** The keys that had parked messages, as {@link #watchParked} saw them. */
  Set<String> parkedKeys() {
    return parkedKeys;
  }

  /**
   * The poison messages written (message ids), the keys of those a fix can repair, how many no fix
   * can repair, and the other customers' orders placed during the warehouse outage.
   */
  record Poison(List<UUID> ids, List<String> fixableKeys, int unfixable, Set<UUID> otherOrders) {}

  /**
   * Takes the warehouse down for the outage, has the wholesale customers (whose orders need it)
   * order during it while other customers order too, and writes the poison messages: malformed
   * JSON, an unknown schema version (both from a buggy producer, so they have no order row) and
   * orders of a product the inventory does not know yet. All poison use dedicated keys ({@code
   * poison-*}, {@code newsku-*}), one to a few messages each, with their own seq numbers.
   */
  Poison injectFailures(HikariDataSource ds, String topic) throws Exception {
    Outbox outbox = Outbox.postgres();
    if (outageSeconds > 0) {
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "INSERT INTO warehouse_outage (until) VALUES (now() + interval '"
                + outageSeconds
                + " seconds')");
      }
      out.printf(
          "warehouse down for %d s; %d orders of %d wholesale customers need it%n",
          outageSeconds, WHOLESALE_ORDERS, ShopSchema.WHOLESALE_CUSTOMERS);
    }
    Set<UUID> others = ConcurrentHashMap.newKeySet();
    ExecutorService otherCustomers = Executors.newSingleThreadExecutor();
    Future<?> othersDone =
        otherCustomers.submit(() -> {
          load.placeOrders(ds, topic, Math.max(50, orders / 10), false, others);
          return null;
        });
    Random random = new Random(7);
    List<UUID> poison = new ArrayList<>();
    List<String> fixableKeys = new ArrayList<>();
    for (int i = 0; i < WHOLESALE_ORDERS; i++) {
      String customer = InventoryProcess.WHOLESALE + (1 + i % ShopSchema.WHOLESALE_CUSTOMERS);
      load.committed(
          outbox.inTransaction(ds, tx -> OrderLoad.placeOrder(tx, topic, customer, random, null)));
      load.countPlaced();
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
                  ds, tx -> OrderLoad.placeOrder(tx, topic, customer2, random, NEW_SKU));
          load.countPlaced();
          load.committed(m);
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
    load.committed(m);
    return m.id();
  }

  /** Collects the keys that have parked messages, until interrupted. */
  void watchParked(HikariDataSource ds) {
    while (!Thread.currentThread().isInterrupted()) {
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery(
                  transport == null
                      ? "SELECT DISTINCT msg_key FROM postbox_parked"
                      : transport.heldKeysQuery())) {
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

  /** The message ids replayed. */
  record Replay(long replayed, List<UUID> messageIds) {}

  /**
   * The fix: the product the unknown-product orders name is added to the inventory; then their dead
   * letters are replayed (written to the outbox again with the same ids, at 50/s). The topic
   * carries every order.created twice, so such a message may have two letters: the later one is
   * discarded with that reason before the replay (replaying both would write the message to the
   * outbox twice), and so is any letter still pending whose message was replayed. The malformed and
   * unknown-version messages cannot be fixed by data: they stay dead-lettered (PENDING), for a
   * producer fix or an operator's discard.
   */
  Replay fixAndReplay(HikariDataSource ds, String consumer, Poison poison) throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO products (sku, initial_stock, stock) VALUES (?, ?, ?)")) {
      ps.setString(1, NEW_SKU);
      ps.setLong(2, ShopSchema.INITIAL_STOCK);
      ps.setLong(3, ShopSchema.INITIAL_STOCK);
      ps.executeUpdate();
    }
    DeadLetterStore store = PostgresDeadLetterStore.create(ds);
    Replayer replayer =
        Replayer.builder(
                ds,
                store,
                transport == null ? KafkaDeadLetters.decoder() : transport.deadLetterDecoder())
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
}
