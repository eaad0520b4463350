package dev.postbox.verify;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.OutboxTransaction;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;
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
 * hot keys, seed, rollbackEvery, and optionally the most events per transaction (default 1; with
 * more, each transaction takes 1 to that many distinct keys, in key order so that two transactions
 * never wait for each other's locks in opposite orders, and writes one business row and one message
 * per key: multi-event transactions, which the CDC relay must never confirm in part). Runs until
 * SIGTERM (or a crash point / kill -9). An optional twelfth argument names a {@link CommitJournal}
 * file the producer appends each acknowledged commit's message ids to ("" for none).
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
    int perTx = args.length > 10 ? Integer.parseInt(args[10]) : 1;
    CommitJournal journal =
        args.length > 11 && !args[11].isEmpty() ? CommitJournal.open(Path.of(args[11])) : null;
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
              .uncaughtExceptionHandler(ProducerMain::workerDied)
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
                  List<String> txKeys = pickKeys(random, keys, hotKeys, perTx);
                  boolean rollback = rollbackEvery > 0 && n % rollbackEvery == 0;
                  try {
                    List<UUID> ids = transaction(ds, outbox, topic, name, phase, txKeys, rollback);
                    if (journal != null) {
                      journal.acknowledged(phase, ids); // the commit returned
                    }
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
      if (journal != null) {
        journal.close();
      }
    });
  }

  /**
   * A worker ended by what it does not catch (an {@link Error}: a class that could not be loaded,
   * out of memory): the process exits, so that the harness records an unexpected exit and starts it
   * again, instead of a process that looks alive and commits nothing.
   */
  private static void workerDied(Thread worker, Throwable e) {
    System.out.println("producer worker " + worker.getName() + " died: " + e);
    e.printStackTrace(System.out);
    System.out.flush();
    Runtime.getRuntime().halt(WORKER_DIED);
  }

  /** The exit code of a producer whose worker died ({@link #workerDied}). */
  static final int WORKER_DIED = 70;

  /** One key (as before) with {@code perTx} 1; else 1 to {@code perTx} distinct keys, sorted. */
  static List<String> pickKeys(SplittableRandom random, int keys, int hotKeys, int perTx) {
    if (perTx <= 1) {
      return List.of(pickKey(random, keys, hotKeys));
    }
    int n = 1 + random.nextInt(perTx);
    java.util.TreeSet<String> picked = new java.util.TreeSet<>();
    while (picked.size() < n) {
      picked.add(pickKey(random, keys, hotKeys));
    }
    return List.copyOf(picked);
  }

  static String pickKey(SplittableRandom random, int keys, int hotKeys) {
    int k = random.nextInt(2) == 0 ? random.nextInt(hotKeys) : random.nextInt(keys);
    return key(k);
  }

  static String key(int k) {
    return String.format("key-%04d", k);
  }

  /** One business transaction; the message ids it committed. */
  private static List<UUID> transaction(
      HikariDataSource ds,
      Outbox outbox,
      String topic,
      String name,
      int phase,
      List<String> keys,
      boolean rollback) {
    Message[] built = new Message[keys.size()];
    if (rollback) {
      // The ids are chosen and recorded before the transaction, so the checker knows them even if
      // this process dies inside the transaction.
      try (Connection c = ds.getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO verify_rolled_back (message_id, key, phase) VALUES (?, ?, ?)")) {
        for (int i = 0; i < keys.size(); i++) {
          built[i] = Message.builder(topic, TYPE).key(keys.get(i)).jsonPayload("{}").build();
          ps.setObject(1, built[i].id());
          ps.setString(2, keys.get(i));
          ps.setInt(3, phase);
          ps.executeUpdate();
        }
      } catch (java.sql.SQLException e) {
        throw new IllegalStateException(e);
      }
    }
    return outbox.inTransaction(
        ds,
        tx -> {
          List<UUID> ids = new ArrayList<>(keys.size());
          for (int i = 0; i < keys.size(); i++) {
            ids.add(write(tx, topic, name, phase, keys.get(i), rollback ? built[i] : null));
          }
          if (rollback) {
            throw new RollbackOnPurpose();
          }
          return ids;
        });
  }

  /**
   * One key's business row and message in the open transaction ({@code rolledBack}: its id); the
   * message's id.
   */
  private static UUID write(
      OutboxTransaction tx, String topic, String name, int phase, String key, Message rolledBack)
      throws java.sql.SQLException {
    long seq;
    try (PreparedStatement ps =
        tx.connection()
            .prepareStatement("UPDATE verify_keys SET seq = seq + 1 WHERE key = ? RETURNING seq")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        seq = rs.getLong(1);
      }
    }
    String json = "{\"key\":\"" + key + "\",\"seq\":" + seq + ",\"phase\":" + phase + "}";
    Message.Builder b = Message.builder(topic, TYPE).key(key).jsonPayload(json);
    Message m = rolledBack != null ? b.id(rolledBack.id()).build() : b.build();
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
    return m.id();
  }
}
