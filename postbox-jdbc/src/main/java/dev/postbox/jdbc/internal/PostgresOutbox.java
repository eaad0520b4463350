package dev.postbox.jdbc.internal;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.jdbc.DuplicateMessageIdException;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.OutboxException;
import dev.postbox.jdbc.OutboxTransaction;
import dev.postbox.jdbc.TransactionRequiredException;
import dev.postbox.jdbc.TransactionWork;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/** {@link Outbox} on PostgreSQL. */
public final class PostgresOutbox implements Outbox {

  private static final String INSERT =
      "INSERT INTO postbox_outbox (" + Rows.COLUMNS + ") VALUES (" + Rows.VALUES + ")";

  // The lock is taken in the CTE, before the INSERT evaluates the identity default: the position is
  // assigned only
  // once this transaction holds the key, so positions of one key follow commit order.
  private static final String LOCK_AND_INSERT =
      "WITH k AS (SELECT pg_advisory_xact_lock(?, ?)) INSERT INTO postbox_outbox ("
          + Rows.COLUMNS
          + ") SELECT "
          + Rows.VALUES
          + " FROM k";

  // Locks in ascending hash order, so two batches never wait on each other in a cycle.
  private static final String LOCK_ALL =
      "SELECT count(pg_advisory_xact_lock(?, h)) FROM (SELECT unnest(?::int[]) AS h ORDER BY 1) s";

  private static final String UNIQUE_VIOLATION = "23505";
  private static final String MESSAGE_ID_INDEX = "postbox_outbox_message_id";
  private static final Pattern UUID_TEXT =
      Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

  private final boolean keyLocking;

  public PostgresOutbox(boolean keyLocking) {
    this.keyLocking = keyLocking;
  }

  @Override
  public void write(Connection connection, Message message) {
    Objects.requireNonNull(message, "message");
    requireTransaction(connection);
    boolean lock = keyLocking && message.key().isPresent();
    try (PreparedStatement ps = connection.prepareStatement(lock ? LOCK_AND_INSERT : INSERT)) {
      int first = 1;
      if (lock) {
        ps.setInt(1, Lanes.LOCK_NAMESPACE);
        ps.setInt(2, Lanes.keyHash(message.key().get()));
        first = 3;
      }
      Rows.bind(ps, first, message);
      ps.executeUpdate();
    } catch (SQLException e) {
      if (isDuplicateId(e)) {
        throw new DuplicateMessageIdException(message.id(), e);
      }
      throw new OutboxException("writing message " + message.id() + " to the outbox failed", e);
    }
  }

  @Override
  public void writeAll(Connection connection, List<Message> messages) {
    Objects.requireNonNull(messages, "messages");
    requireTransaction(connection);
    if (messages.isEmpty()) {
      return;
    }
    Set<UUID> ids = new HashSet<>();
    for (Message m : messages) {
      if (!ids.add(m.id())) {
        throw new DuplicateMessageIdException(m.id(), null);
      }
    }
    try {
      if (keyLocking) {
        TreeSet<Integer> hashes = new TreeSet<>();
        for (Message m : messages) {
          m.key().ifPresent(k -> hashes.add(Lanes.keyHash(k)));
        }
        if (!hashes.isEmpty()) {
          try (PreparedStatement ps = connection.prepareStatement(LOCK_ALL)) {
            Array array = connection.createArrayOf("int4", hashes.toArray());
            ps.setInt(1, Lanes.LOCK_NAMESPACE);
            ps.setArray(2, array);
            ps.executeQuery().close();
          }
        }
      }
      try (PreparedStatement ps = connection.prepareStatement(INSERT)) {
        for (Message m : messages) {
          Rows.bind(ps, 1, m);
          ps.addBatch();
        }
        ps.executeBatch();
      }
    } catch (SQLException e) {
      if (isDuplicateId(e)) {
        throw new DuplicateMessageIdException(duplicateId(e, ids), e);
      }
      throw new OutboxException("writing " + messages.size() + " messages to the outbox failed", e);
    }
  }

  @Override
  public <T> T inTransaction(DataSource dataSource, TransactionWork<T> work) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(work, "work");
    try (Connection c = dataSource.getConnection()) {
      try {
        return Transactions.forCaller(
            c,
            "the outbox transaction",
            "its messages may be in the outbox or not",
            tx -> new Transactions.Step<>(work.execute(transaction(tx)), true),
            OutboxException::new,
            () -> CrashPoints.hit(CrashPoints.OUTBOX_BEFORE_COMMIT),
            () -> CrashPoints.hit(CrashPoints.OUTBOX_AFTER_COMMIT));
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Exception e) {
        throw new OutboxException("transaction failed and was rolled back", e);
      }
    } catch (SQLException e) {
      throw new OutboxException("transaction failed", e);
    }
  }

  /** The callback's view of the transaction on {@code c}. */
  private OutboxTransaction transaction(Connection c) {
    return new OutboxTransaction() {
      @Override
      public Connection connection() {
        return c;
      }

      @Override
      public void write(Message message) {
        PostgresOutbox.this.write(c, message);
      }

      @Override
      public void writeAll(List<Message> messages) {
        PostgresOutbox.this.writeAll(c, messages);
      }
    };
  }

  /** A unique violation of the message id index, on this exception or a batch's next one. */
  private static boolean isDuplicateId(SQLException e) {
    for (SQLException x = e; x != null; x = x.getNextException()) {
      if (UNIQUE_VIOLATION.equals(x.getSQLState())
          && String.valueOf(x.getMessage()).contains(MESSAGE_ID_INDEX)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The id the database named in its error detail ({@code Key (message_id)=(...) already exists}),
   * among {@code ids}; the server's message is the only place a batch's failing row is named.
   */
  private static UUID duplicateId(SQLException e, Set<UUID> ids) {
    for (SQLException x = e; x != null; x = x.getNextException()) {
      Matcher m = UUID_TEXT.matcher(String.valueOf(x.getMessage()));
      while (m.find()) {
        UUID id = UUID.fromString(m.group());
        if (ids.contains(id)) {
          return id;
        }
      }
    }
    throw new OutboxException("a message id of this batch is already in the outbox", e);
  }

  private static void requireTransaction(Connection connection) {
    Objects.requireNonNull(connection, "connection");
    try {
      if (connection.getAutoCommit()) {
        throw new TransactionRequiredException();
      }
    } catch (SQLException e) {
      throw new OutboxException("cannot read the connection's auto-commit mode", e);
    }
  }
}
