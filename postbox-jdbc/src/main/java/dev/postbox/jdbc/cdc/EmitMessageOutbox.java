package dev.postbox.jdbc.cdc;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.core.Message;
import dev.postbox.jdbc.OutboxException;
import dev.postbox.jdbc.TransactionRequiredException;
import dev.postbox.jdbc.cdc.internal.EmittedEnvelope;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The outbox that writes no table row: each message is a transactional logical message ({@code
 * pg_logical_emit_message(true, prefix, envelope)}) in the caller's transaction, so it exists only
 * in the WAL, and only if the transaction commits. A {@link CdcRelay} built with {@link
 * CdcRelay.Builder#logicalMessages(boolean) logicalMessages(true)} and the same prefix decodes the
 * messages of committed transactions, in commit order, and publishes them like outbox rows.
 *
 * <pre>{@code
 * EmitMessageOutbox outbox = EmitMessageOutbox.create();
 * try (Connection c = dataSource.getConnection()) {
 *   c.setAutoCommit(false);
 *   // ... the business change ...
 *   outbox.write(c, message);
 *   c.commit();
 * }
 * }</pre>
 *
 * <p>What it saves: the outbox row's insert, its indexes, its later mark or delete and the vacuum
 * of it. What it costs: nothing to query (no pending rows to look at, no {@code OperationsProbe}
 * outbox gauges, no {@code MessageTracer} row), no per-key advisory lock (the WAL's commit order is
 * the order; two transactions writing one key commit in some order and are published in it), and no
 * recovery from the table after a lost slot: the messages of the gap are gone with the WAL. Keep
 * {@code max_slot_wal_keep_size} generous and alert on slot lag. Needs PostgreSQL 14 or newer.
 * Thread-safe (stateless).
 */
public final class EmitMessageOutbox {

  /** The default logical message prefix, shared with {@link CdcRelay.Builder#messagePrefix}. */
  public static final String DEFAULT_PREFIX = "postbox.outbox";

  private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9_.\\-]{1,100}");
  private static final String EMIT = "SELECT pg_logical_emit_message(true, ?, ?)";
  private static final String EMIT_ALL =
      "SELECT pg_logical_emit_message(true, ?, m) FROM unnest(?::text[]) WITH ORDINALITY AS t(m, i)"
          + " ORDER BY i";
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
