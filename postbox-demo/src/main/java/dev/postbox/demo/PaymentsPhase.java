package dev.postbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.cli.TraceOutput;
import dev.postbox.core.Message;
import dev.postbox.core.reply.Reply;
import dev.postbox.core.reply.RequestTimeoutException;
import dev.postbox.core.reply.Requester;
import dev.postbox.core.reply.RequesterStats;
import dev.postbox.jdbc.MessageTrace;
import dev.postbox.jdbc.MessageTracer;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The lesson's request/reply example in the shop: the orders service (this process) asks the
 * payments service ({@link PaymentsProcess}, its own process) to authorise the charge of each
 * wholesale order, over the broker, and waits for each reply.
 *
 * <ul>
 *   <li>The requests go {@value #WINDOW} at a time, each with a timeout of {@link #TIMEOUT}; the
 *       payments process is halted once mid-way between a charge's commit and its reply ({@link
 *       #CRASH_AT}), restarted, and answers the requests it had with their stored replies.
 *   <li>{@value #RESENT} answered requests are sent again with the same id (as a caller retrying
 *       would): they must get the same reply (the same charge) and charge nothing.
 *   <li>The last {@value #HELD} orders' requests are held by the payments service until their short
 *       timeout ({@link #HELD_TIMEOUT}) has ended them; their replies then arrive late and go to
 *       the late-reply listener.
 * </ul>
 *
 * <p>The figures come from the requester's counters and from {@code payment_charges}, the payments'
 * effect table: every wholesale order must be charged exactly once.
 */
final class PaymentsPhase {

  /** The payments process halts at this hit of {@code consumer.after-commit-before-completed}. */
  static final int CRASH_AT = 10;

  static final int WINDOW = 4;
  static final int RESENT = 5;
  static final int HELD = 3;
  static final Duration TIMEOUT = Duration.ofSeconds(90);
  static final Duration HELD_TIMEOUT = Duration.ofMillis(500);

  /** What the phase measured. */
  record Result(
      long requestsSent,
      long repliesReceived,
      long requestTimeouts,
      long lateReplies,
      long duplicateReplies,
      long resent,
      long resentSameReply,
      long orders,
      long ordersCharged,
      long duplicateCharges,
      double p50,
      double p99,
      List<String> errors) {

    /** Every request answered once in effect or timed out, and nothing charged twice. */
    boolean ok() {
      return errors.isEmpty()
          && duplicateCharges == 0
          && ordersCharged == orders
          && resentSameReply == resent
          && requestTimeouts == HELD
          && lateReplies == HELD
          && repliesReceived + requestTimeouts == requestsSent;
    }
  }

  private final PrintStream out;
  private final Duration patience;

  PaymentsPhase(PrintStream out, Duration patience) {
    this.out = out;
    this.patience = patience;
  }

  /** The payments' tables: its effect (no unique constraint) and the gate of held requests. */
  static void createTables(HikariDataSource ds) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE payment_charges (id bigserial, request_id uuid NOT NULL,"
              + " order_id uuid NOT NULL, amount_cents bigint NOT NULL, incarnation int NOT NULL,"
              + " charged_at timestamptz NOT NULL DEFAULT now())");
      s.execute("CREATE TABLE payment_gate (open boolean NOT NULL)");
      s.execute("INSERT INTO payment_gate VALUES (false)");
    }
  }

  private record Order(UUID id, long amountCents) {}

  /**
   * Authorises every wholesale order's charge with requests on {@code topic}, through a requester
   * of {@code transport} reading its replies at {@code replyTopic} (Kafka; RabbitMQ has a reply
   * queue of its own).
   */
  Result run(HikariDataSource ds, ShopTransport transport, String topic, String replyTopic)
      throws Exception {
    AtomicInteger late = new AtomicInteger();
    try (Requester requester = transport.requester(replyTopic, r -> late.incrementAndGet())) {
      return run(ds, requester, late, topic);
    }
  }

  private Result run(HikariDataSource ds, Requester requester, AtomicInteger late, String topic)
      throws Exception {
    long t0 = System.nanoTime();
    List<Order> orders = wholesaleOrders(ds);
    List<Order> normal = orders.subList(0, Math.max(0, orders.size() - HELD));
    List<Order> held = orders.subList(normal.size(), orders.size());
    Calls calls = new Calls(requester, topic);
    List<Message> sent = calls.authoriseAll(normal);
    int resent = Math.min(RESENT, sent.size());
    int same = calls.resend(sent, resent);
    int timedOut = calls.timeOut(held);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.executeUpdate("UPDATE payment_gate SET open = true");
    }
    long deadline = System.nanoTime() + patience.toNanos();
    while (late.get() < timedOut && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    while (charged(ds) < orders.size() && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }

    RequesterStats stats = requester.stats();
    double[] lat = calls.latencies.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    long charges = ShopAudit.queryLong(ds, "SELECT count(*) FROM payment_charges");
    long ordersCharged = charged(ds);
    Result r =
        new Result(
            stats.sent(),
            stats.replied(),
            stats.timedOut(),
            stats.lateReplies(),
            stats.duplicateReplies(),
            resent,
            same,
            orders.size(),
            ordersCharged,
            charges - ordersCharged,
            ShopObserver.percentile(lat, 50),
            ShopObserver.percentile(lat, 99),
            List.copyOf(calls.errors));
    out.printf(
        "payments: %d requests sent (%d again with the same id), %d replies, %d timed out, %d late"
            + " replies, %d duplicate replies ignored; %d of %d wholesale orders charged, %d"
            + " duplicate charges; round trip p50 %.1f ms, p99 %.1f ms (%.1f s)%n",
        r.requestsSent(),
        resent,
        r.repliesReceived(),
        r.requestTimeouts(),
        r.lateReplies(),
        r.duplicateReplies(),
        ordersCharged,
        orders.size(),
        r.duplicateCharges(),
        r.p50(),
        r.p99(),
        (System.nanoTime() - t0) / 1e9);
    r.errors().forEach(e -> out.println("  payments error: " + e));
    if (!sent.isEmpty()) {
      // the request, its inbox record at payments and the stored reply
      MessageTrace trace = MessageTracer.postgres(ds).trace(sent.get(0).id());
      out.println("trace of a charge request (./postbox trace " + trace.messageId() + "):");
      TraceOutput.print(trace, out);
    }
    return r;
  }

  /** The orders service's calls, with the round trips and what went wrong. */
  private final class Calls {
    final Requester requester;
    final String topic;
    final ConcurrentLinkedQueue<Double> latencies = new ConcurrentLinkedQueue<>();
    final Map<UUID, String> replies = new ConcurrentHashMap<>();
    final List<String> errors = new CopyOnWriteArrayList<>();

    Calls(Requester requester, String topic) {
      this.requester = requester;
      this.topic = topic;
    }

    /** Authorises {@code orders}, a window at a time; returns the requests sent. */
    List<Message> authoriseAll(List<Order> orders) throws InterruptedException {
      Semaphore window = new Semaphore(WINDOW);
      List<Message> sent = new ArrayList<>();
      List<CompletableFuture<Reply>> futures = new ArrayList<>();
      for (Order o : orders) {
        window.acquire();
        Message m = request(topic, o, false);
        sent.add(m);
        long start = System.nanoTime();
        futures.add(
            requester
                .request(m, TIMEOUT)
                .whenComplete((reply, error) -> {
                  window.release();
                  if (reply != null) {
                    latencies.add((System.nanoTime() - start) / 1e6);
                    replies.put(m.id(), reply.payload().asString());
                  }
                }));
      }
      for (int i = 0; i < futures.size(); i++) {
        try {
          futures.get(i).get();
        } catch (ExecutionException e) {
          errors.add("request " + sent.get(i).id() + " ended without a reply: " + e.getCause());
        }
      }
      return sent;
    }

    /**
     * Sends {@code count} of {@code sent} again with the same id; returns how many got the same
     * reply (the stored one: the same charge).
     */
    int resend(List<Message> sent, int count) throws InterruptedException {
      int same = 0;
      for (int i = 0; i < count; i++) {
        Message m = sent.get(i * sent.size() / count);
        long start = System.nanoTime();
        try {
          Reply again = requester.requestAndWait(m, TIMEOUT);
          latencies.add((System.nanoTime() - start) / 1e6);
          if (again.payload().asString().equals(replies.get(m.id()))) {
            same++;
          } else {
            errors.add("request " + m.id() + " sent again got another reply");
          }
        } catch (RuntimeException e) {
          errors.add("request " + m.id() + " sent again failed: " + e);
        }
      }
      return same;
    }

    /** Sends requests payments holds, with a short timeout; returns how many timed out. */
    int timeOut(List<Order> held) throws InterruptedException {
      int timedOut = 0;
      for (Order o : held) {
        Message m = request(topic, o, true);
        try {
          requester.requestAndWait(m, HELD_TIMEOUT);
          errors.add("held request " + m.id() + " was answered within " + HELD_TIMEOUT);
        } catch (RequestTimeoutException e) {
          timedOut++;
          if (timedOut == 1) {
            out.println("as expected: " + e.getMessage());
          }
        } catch (RuntimeException e) {
          errors.add("held request " + m.id() + " failed: " + e);
        }
      }
      return timedOut;
    }
  }

  private static Message request(String topic, Order o, boolean hold) {
    return Message.builder(topic, "charge.authorise")
        .key(o.id().toString())
        .source("/shop/orders")
        .jsonPayload(
            "{\"order_id\":\""
                + o.id()
                + "\",\"amount_cents\":"
                + o.amountCents()
                + ",\"hold\":"
                + hold
                + "}")
        .build();
  }

  private static List<Order> wholesaleOrders(HikariDataSource ds) throws Exception {
    List<Order> orders = new ArrayList<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT id, amount_cents FROM orders WHERE customer_id LIKE ?"
                    + " ORDER BY created_at, id")) {
      ps.setString(1, InventoryProcess.WHOLESALE + "%");
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          orders.add(new Order(rs.getObject(1, UUID.class), rs.getLong(2)));
        }
      }
    }
    return orders;
  }

  private static long charged(HikariDataSource ds) throws Exception {
    return ShopAudit.queryLong(ds, "SELECT count(DISTINCT order_id) FROM payment_charges");
  }
}
