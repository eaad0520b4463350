package dev.postbox.verify;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * The producer application of the campaign, as its own OS process: business transactions, each one
 * business row ({@code verify_business}) plus one outbox message in one transaction, over many keys
 * skewed toward a few hot ones. Each transaction takes the next per-key sequence number under the
 * key's row lock ({@code verify_keys}), so per key the sequence is the commit order. Every {@code
 * rollbackEvery}-th transaction writes its rows and outbox message and is then rolled back on
 * purpose; its message id is recorded first ({@code verify_rolled_back}, autocommit).
 *
 * <p>Arguments: JDBC URL, topic, name, phase, transactions per second (all threads), threads, keys,
 * hot keys, seed, rollbackEvery. Runs until SIGTERM (or a crash point / kill -9).
 */
public final class ProducerMain {

  static final String TYPE = "verify.tx";

  private ProducerMain() {}

  /** Thrown inside the business transaction to roll it back after the outbox write. */
  static final class RollbackOnPurpose extends RuntimeException {
    RollbackOnPurpose() {
      super("rolled back on purpose", null, false, false);
    }
  }

  public static void main(String[] args) throws Exception {
    String jdbcUrl = args[0];
    String topic = args[1];
    String name = args[2];
    int phase = Integer.parseInt(args[3]);
    double rate = Double.parseDouble(args[4]);
    int threads = Integer.parseInt(args[5]);
    int keys = Integer.parseInt(args[6]);
    int hotKeys = Integer.parseInt(args[7]);
    long seed = Long.parseLong(args[8]);
    int rollbackEvery = Integer.parseInt(args[9]);
    HikariDataSource ds = ChildSupport.dataSource(jdbcUrl, name, threads + 1, "");
    Outbox outbox = Outbox.postgres();
    AtomicBoolean running = new AtomicBoolean(true);
    List<Thread> workers = new ArrayList<>();
    long periodNanos = (long) (threads * 1e9 / rate);
    for (int t = 0; t < threads; t++) {
      SplittableRandom random = new SplittableRandom(seed * 31 + t);
      workers.add(
          Thread.ofPlatform()
              .name("producer-" + t)
              .start(() -> {
                long n = 0;
                long next = System.nanoTime();
                long failures = 0;
                while (running.get()) {
                  next += periodNanos;
                  long wait = next - System.nanoTime();
                  if (wait > 0) {
                    LockSupport.parkNanos(wait);
                  } else if (wait < -1_000_000_000L) {
                    next = System.nanoTime(); // do not burst after a stall
                  }
                  if (!running.get()) {
                    break;
                  }
                  n++;
                  String key = pickKey(random, keys, hotKeys);
                  boolean rollback = rollbackEvery > 0 && n % rollbackEvery == 0;
                  try {
                    transaction(ds, outbox, topic, name, phase, key, rollback);
                  } catch (RuntimeException e) {
                    if (!(e instanceof RollbackOnPurpose) && failures++ % 50 == 0) {
                      System.out.println("producer " + name + ": transaction failed: " + e);
                    }
                  }
                }
              }));
    }
    System.out.println("producer " + name + " phase " + phase + " started");
    ChildSupport.runUntilTerminated(() -> {
      running.set(false);
      for (Thread w : workers) {
        try {
          w.join(5_000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      ds.close();
    });
  }

  static String pickKey(SplittableRandom random, int keys, int hotKeys) {
    int k = random.nextInt(2) == 0 ? random.nextInt(hotKeys) : random.nextInt(keys);
    return key(k);
  }

  static String key(int k) {
    return String.format("key-%04d", k);
  }

  private static void transaction(
      HikariDataSource ds,
      Outbox outbox,
      String topic,
      String name,
      int phase,
      String key,
      boolean rollback) {
    Message[] built = new Message[1];
    if (rollback) {
      // The id is chosen and recorded before the transaction, so the checker knows it even if this
      // process dies inside the transaction.
      built[0] = Message.builder(topic, TYPE).key(key).jsonPayload("{}").build();
      try (Connection c = ds.getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO verify_rolled_back (message_id, key, phase) VALUES (?, ?, ?)")) {
        ps.setObject(1, built[0].id());
        ps.setString(2, key);
        ps.setInt(3, phase);
        ps.executeUpdate();
      } catch (java.sql.SQLException e) {
        throw new IllegalStateException(e);
      }
    }
    outbox.inTransaction(
        ds,
        tx -> {
          long seq;
          try (PreparedStatement ps =
              tx.connection()
                  .prepareStatement(
                      "UPDATE verify_keys SET seq = seq + 1 WHERE key = ? RETURNING seq")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              seq = rs.getLong(1);
            }
          }
          String json = "{\"key\":\"" + key + "\",\"seq\":" + seq + ",\"phase\":" + phase + "}";
          Message m =
              rollback
                  ? Message.builder(topic, TYPE)
                      .id(built[0].id())
                      .key(key)
                      .jsonPayload(json)
                      .build()
                  : Message.builder(topic, TYPE).key(key).jsonPayload(json).build();
          try (PreparedStatement ps =
              tx.connection()
                  .prepareStatement(
                      "INSERT INTO verify_business (message_id, key, seq, phase, producer)"
                          + " VALUES (?, ?, ?, ?, ?)")) {
            ps.setObject(1, m.id());
            ps.setString(2, key);
            ps.setLong(3, seq);
            ps.setInt(4, phase);
            ps.setString(5, name);
            ps.executeUpdate();
          }
          tx.write(m);
          if (rollback) {
            throw new RollbackOnPurpose();
          }
          return null;
        });
  }
}
