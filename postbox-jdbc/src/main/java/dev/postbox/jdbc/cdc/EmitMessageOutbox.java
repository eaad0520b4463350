package dev.postbox.jdbc.cdc;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.OutboxException;
import dev.postbox.jdbc.OutboxTransaction;
import dev.postbox.jdbc.TransactionRequiredException;
import dev.postbox.jdbc.TransactionWork;
import dev.postbox.jdbc.cdc.internal.EmittedEnvelope;
import dev.postbox.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The outbox that writes no table row: each message is a transactional logical message ({@code
 * pg_logical_emit_message(true, prefix, envelope)}) in the caller's transaction, so it exists only
 * in the WAL, and only if the transaction commits. A {@link CdcRelay} built with {@link
 * CdcRelay.Builder#logicalMessages(boolean) logicalMessages(true)} and the same prefix decodes the
 * messages of committed transactions, in commit order, and publishes them like outbox rows.
 *
 * <pre>{@code
 * EmitMessageOutbox outbox = EmitMessageOutbox.create();
 * outbox.inTransaction(dataSource, tx -> {
 *   placeOrder(tx.connection(), order);
 *   tx.write(message); // emitted with the commit, in the same round trip
 *   return null;
 * });
 * }</pre>
 *
 * <p>Or in a transaction of your own: {@link #write(Connection, Message)} emits at once, in one
 * round trip of its own, before your commit.
 *
 * <p><b>{@link #inTransaction} and the round trip it saves.</b> The messages its callback writes
 * are encoded at once and emitted when the callback returns, in the statement that commits: {@code
 * SELECT pg_logical_emit_message(...); COMMIT} goes to the server as one round trip, so the outbox
 * adds no round trip to the business transaction (on the benchmark's 8 writers that is the
 * difference between about 0.75x and 0.9x of business-only throughput; docs/benchmarks.md). If the
 * emission fails, PostgreSQL skips the {@code COMMIT} and the transaction is rolled back; if the
 * commit fails, it is rolled back too; either way an {@link OutboxException} says so. The messages
 * are emitted after every other statement of the transaction, so in a transaction that also writes
 * table-outbox rows they follow those rows (use {@link #write(Connection, Message)} to interleave).
 * The callback's connection refuses {@code commit()}, {@code rollback()}, {@code setAutoCommit} and
 * {@code close()}: the transaction is this method's to end.
 *
 * <p>What it saves: the outbox row's insert, its indexes, its later mark or delete and the vacuum
 * of it. What it costs: nothing to query (no pending rows to look at, no {@code OperationsProbe}
 * outbox gauges, no {@code MessageTracer} row), no per-key advisory lock (the WAL's commit order is
 * the order; two transactions writing one key commit in some order and are published in it), and no
 * recovery from the table after a lost slot: the messages of the gap are gone with the WAL. Keep
 * {@code max_slot_wal_keep_size} generous and alert on slot lag. Needs PostgreSQL 14 or newer. It
 * is an {@link Outbox}: code written against that interface takes either. Thread-safe (stateless).
 */
public final class EmitMessageOutbox implements Outbox {

  /** The default logical message prefix, shared with {@link CdcRelay.Builder#messagePrefix}. */
  public static final String DEFAULT_PREFIX = "postbox.outbox";

  private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9_.\\-]{1,100}");
  private static final String EMIT = "SELECT pg_catalog.pg_logical_emit_message(true, ?, ?)";
  private static final String EMIT_ALL =
      "SELECT pg_catalog.pg_logical_emit_message(true, ?, m) FROM unnest(?::text[]) WITH ORDINALITY AS t(m, i)"
          + " ORDER BY i";
  private static final String COMMIT = "; COMMIT";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String prefix;

  private EmitMessageOutbox(String prefix) {
    this.prefix = prefix;
  }

  /** An outbox with the {@linkplain #DEFAULT_PREFIX default prefix}. */
  public static EmitMessageOutbox create() {
    return create(DEFAULT_PREFIX);
  }

  /** An outbox with its own prefix (letters, digits, {@code _ . -}; at most 100). */
  public static EmitMessageOutbox create(String prefix) {
    Objects.requireNonNull(prefix, "prefix");
    if (!PREFIX.matcher(prefix).matches()) {
      throw new IllegalArgumentException(
          "prefix must be letters, digits, _ . - (at most 100), was " + prefix);
    }
    return new EmitMessageOutbox(prefix);
  }

  /** The prefix its messages carry. */
  public String prefix() {
    return prefix;
  }

  /**
   * Emits {@code message} in the transaction open on {@code connection} (auto-commit off, else
   * {@link TransactionRequiredException}).
   */
  @Override
  public void write(Connection connection, Message message) {
    requireTransaction(connection);
    try (PreparedStatement ps = connection.prepareStatement(EMIT)) {
      ps.setString(1, prefix);
      ps.setString(2, encode(message));
      ps.execute();
    } catch (SQLException e) {
      throw new OutboxException("emitting message " + message.id() + " failed", e);
    }
  }

  /** Emits {@code messages}, in list order, in one statement, in the open transaction. */
  @Override
  public void writeAll(Connection connection, List<Message> messages) {
    requireTransaction(connection);
    if (messages.isEmpty()) {
      return;
    }
    try (PreparedStatement ps = connection.prepareStatement(EMIT_ALL)) {
      ps.setString(1, prefix);
      ps.setArray(
          2,
          connection.createArrayOf(
              "text", messages.stream().map(EmitMessageOutbox::encode).toArray()));
      ps.execute();
    } catch (SQLException e) {
      throw new OutboxException("emitting " + messages.size() + " messages failed", e);
    }
  }

  /**
   * Runs {@code work} in a new transaction on a connection from {@code dataSource} and commits it
   * with the messages {@code work} wrote through its {@link OutboxTransaction}, emitted in the
   * committing round trip; rolls back if {@code work} throws (and rethrows, checked exceptions
   * wrapped in {@link OutboxException}); always closes the connection.
   *
   * @throws OutboxException if the emission or the commit fails (the transaction is rolled back,
   *     unless the connection broke during the commit: then it may have committed), or if {@code
   *     work} left the transaction aborted
   * @throws IllegalStateException if {@code work} committed or rolled back the transaction itself
   */
  @Override
  public <T> T inTransaction(DataSource dataSource, TransactionWork<T> work) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(work, "work");
    try (Connection c = dataSource.getConnection()) {
      List<String> envelopes = new ArrayList<>();
      try {
        return Transactions.forCaller(
            c,
            "the emit-message outbox transaction",
            "its messages may have been emitted or not",
            tx ->
                new Transactions.Step<>(
                    work.execute(
                        buffering(
                            Transactions.guarded(tx, "EmitMessageOutbox.inTransaction"),
                            envelopes)),
                    true),
            OutboxException::new,
            () -> CrashPoints.hit(CrashPoints.OUTBOX_BEFORE_COMMIT),
            tx -> emitAndCommit(tx, envelopes),
            () -> CrashPoints.hit(CrashPoints.OUTBOX_AFTER_COMMIT),
            true);
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Exception e) {
        throw new OutboxException("transaction failed and was rolled back", e);
      }
    } catch (SQLException e) {
      throw new OutboxException("transaction failed", e);
    }
  }

  /** The callback's view of the transaction on {@code c}: its writes collect envelopes. */
  private static OutboxTransaction buffering(Connection c, List<String> envelopes) {
    return new OutboxTransaction() {
      @Override
      public Connection connection() {
        return c;
      }

      @Override
      public void write(Message message) {
        Objects.requireNonNull(message, "message");
        envelopes.add(encode(message));
      }

      @Override
      public void writeAll(List<Message> messages) {
        Objects.requireNonNull(messages, "messages");
        List<String> encoded = messages.stream().map(EmitMessageOutbox::encode).toList();
        envelopes.addAll(encoded); // all or none
      }
    };
  }

  /**
   * Emits {@code envelopes} and commits, in one round trip: one statement of two parts sent before
   * one sync, so a failed emission makes PostgreSQL skip the {@code COMMIT} and leaves the
   * transaction aborted for the rollback that follows. With nothing to emit, a plain commit.
   */
  private void emitAndCommit(Connection c, List<String> envelopes) throws SQLException {
    if (envelopes.isEmpty()) {
      c.commit();
      return;
    }
    boolean one = envelopes.size() == 1;
    try (PreparedStatement ps = c.prepareStatement((one ? EMIT : EMIT_ALL) + COMMIT)) {
      ps.setString(1, prefix);
      if (one) {
        ps.setString(2, envelopes.get(0));
      } else {
        ps.setArray(2, c.createArrayOf("text", envelopes.toArray()));
      }
      ps.execute();
    }
  }

  private static void requireTransaction(Connection c) {
    Objects.requireNonNull(c, "connection");
    try {
      if (c.getAutoCommit()) {
        throw new TransactionRequiredException();
      }
    } catch (SQLException e) {
      throw new OutboxException("cannot read the connection's auto-commit mode", e);
    }
  }

  private static String encode(Message m) {
    try {
      return JSON.writeValueAsString(EmittedEnvelope.columns(m));
    } catch (JsonProcessingException e) {
      throw new OutboxException("cannot encode message " + m.id(), e);
    }
  }
}
