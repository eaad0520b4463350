package dev.postbox.jdbc.internal;

import dev.postbox.core.Payload;
import dev.postbox.core.codec.StoredText;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.InboxStore.Outcome;
import dev.postbox.jdbc.InboxException;
import dev.postbox.jdbc.TransactionRequiredException;
import dev.postbox.jdbc.TransactionRunner;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;

/** {@link InboxStore} on PostgreSQL. */
public final class PostgresInboxStoreImpl implements InboxStore {

  private static final String CLAIM_WITH_FINGERPRINT =
      "INSERT INTO postbox_inbox (consumer, message_id, payload_sha256) VALUES (?, ?, ?)"
          + " ON CONFLICT DO NOTHING";
  private static final String STORED_FINGERPRINT =
      "SELECT payload_sha256 FROM postbox_inbox WHERE consumer = ? AND message_id = ?";

  // the result of the effect, on the row this transaction just inserted (migration V10)
  private static final String STORE_RESULT =
      "UPDATE postbox_inbox SET result = ?, result_content_type = ?"
          + " WHERE consumer = ? AND message_id = ?";
  private static final String STORED_FINGERPRINT_AND_RESULT =
      "SELECT payload_sha256, result, result_content_type FROM postbox_inbox"
          + " WHERE consumer = ? AND message_id = ?";

  private static final String CLAIM =
      "INSERT INTO postbox_inbox (consumer, message_id) VALUES (?, ?) ON CONFLICT DO NOTHING";

  // Sorted, so that two batches with overlapping ids take the unique-index entries in the same
  // order and cannot deadlock. A repeated id in one batch conflicts with its own first insert and
  // is returned once.
  private static final String CLAIM_ALL =
      "INSERT INTO postbox_inbox (consumer, message_id)"
          + " SELECT ?, id FROM unnest(CAST(? AS uuid[])) AS ids(id) ORDER BY id"
          + " ON CONFLICT DO NOTHING RETURNING message_id";

  // The same rows with a plain insert: fails (unique_violation) if any id is recorded already.
  // Sorted like CLAIM_ALL, so the two forms take the index entries in the same order.
  private static final String CLAIM_ALL_NEW =
      "INSERT INTO postbox_inbox (consumer, message_id)"
          + " SELECT ?, id FROM unnest(CAST(? AS uuid[])) AS ids(id) ORDER BY id";

  private static final String UNIQUE_VIOLATION = "23505";

  // The row is locked even when the WHERE clause is false, so concurrent advances of one entity
  // serialise on it until their transactions end.
  private static final String ADVANCE =
      "INSERT INTO postbox_entity_version (entity, version) VALUES (?, ?)"
          + " ON CONFLICT (entity) DO UPDATE SET version = EXCLUDED.version, updated_at = now()"
          + " WHERE postbox_entity_version.version < EXCLUDED.version RETURNING version";

  private static final String PURGE =
      "DELETE FROM postbox_inbox WHERE consumer = ? AND message_id IN (SELECT message_id"
          + " FROM postbox_inbox WHERE consumer = ? AND processed_at < now() - make_interval(secs => ?)"
          + " LIMIT ?)";

  private final DataSource dataSource;
  private final TransactionRunner transactions;

  /** The inbox on {@code dataSource}, committing its transactions itself. */
  public PostgresInboxStoreImpl(DataSource dataSource) {
    this(dataSource, Optional.empty());
  }

  /**
   * The inbox on {@code dataSource}, its transactions run by {@code transactions} when present
   * (whose connections must be {@code dataSource}'s), else by itself.
   */
  public PostgresInboxStoreImpl(DataSource dataSource, Optional<TransactionRunner> transactions) {
    this.dataSource = dataSource;
    this.transactions =
        transactions.map(PostgresInboxStoreImpl::checked).orElseGet(() -> own(dataSource));
    Tables.require(dataSource, InboxException::new, "postbox_inbox", "postbox_entity_version");
  }

  @Override
  public boolean processOnce(String consumer, UUID messageId, Work work) throws Exception {
    requireConsumer(consumer);
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(work, "work");
    String what = "message " + messageId + " of consumer '" + consumer + "'";
    return inTransaction(
        what,
        c -> {
          if (!claim(c, consumer, messageId, what)) {
            return new TransactionRunner.Step<>(false, false);
          }
          work.run(c);
          return new TransactionRunner.Step<>(true, true);
        });
  }

  @Override
  public Outcome processOnce(String consumer, UUID messageId, byte[] payloadSha256, Work work)
      throws Exception {
    requireConsumer(consumer);
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(payloadSha256, "payloadSha256");
    Objects.requireNonNull(work, "work");
    String what = "message " + messageId + " of consumer '" + consumer + "'";
    return inTransaction(
        what,
        c -> {
          try (PreparedStatement ps = c.prepareStatement(CLAIM_WITH_FINGERPRINT)) {
            ps.setString(1, consumer);
            ps.setObject(2, messageId);
            ps.setBytes(3, payloadSha256);
            if (ps.executeUpdate() == 1) {
              work.run(c);
              return new TransactionRunner.Step<>(Outcome.APPLIED, true);
            }
          } catch (SQLException e) {
            throw new InboxException("recording " + what + " in the inbox failed", e);
          }
          // Taken: the insert waited for the other transaction, so its row is committed and
          // visible.
          try (PreparedStatement ps = c.prepareStatement(STORED_FINGERPRINT)) {
            ps.setString(1, consumer);
            ps.setObject(2, messageId);
            try (ResultSet rs = ps.executeQuery()) {
              byte[] stored = rs.next() ? rs.getBytes(1) : null;
              boolean conflict = stored != null && !java.util.Arrays.equals(stored, payloadSha256);
              return new TransactionRunner.Step<>(
                  conflict ? Outcome.CONFLICT : Outcome.DUPLICATE, false);
            }
          } catch (SQLException e) {
            throw new InboxException("reading the fingerprint of " + what + " failed", e);
          }
        });
  }

  @Override
  public Processed processOnceWithResult(
      String consumer, UUID messageId, byte[] payloadSha256, ResultWork work) throws Exception {
    requireConsumer(consumer);
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(payloadSha256, "payloadSha256");
    Objects.requireNonNull(work, "work");
    String what = "message " + messageId + " of consumer '" + consumer + "'";
    return inTransaction(
        what,
        c -> {
          try (PreparedStatement ps = c.prepareStatement(CLAIM_WITH_FINGERPRINT)) {
            ps.setString(1, consumer);
            ps.setObject(2, messageId);
            ps.setBytes(3, payloadSha256);
            if (ps.executeUpdate() == 1) {
              Optional<Payload> result =
                  Objects.requireNonNull(work.run(c), "the work returned null, not a result");
              if (result.isPresent()) {
                storeResult(c, consumer, messageId, result.get(), what);
              }
              return new TransactionRunner.Step<>(new Processed(Outcome.APPLIED, result), true);
            }
          } catch (SQLException e) {
            throw new InboxException("recording " + what + " in the inbox failed", e);
          }
          return new TransactionRunner.Step<>(
              storedOutcome(c, consumer, messageId, payloadSha256, what), false);
        });
  }

  private static void storeResult(
      Connection c, String consumer, UUID messageId, Payload result, String what) {
    try (PreparedStatement ps = c.prepareStatement(STORE_RESULT)) {
      ps.setBytes(1, result.unsafeBytes());
      ps.setString(2, StoredText.encode(result.contentType()));
      ps.setString(3, consumer);
      ps.setObject(4, messageId);
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new InboxException("storing the result of " + what + " failed", e);
    }
  }

  /** A taken id: a duplicate with its stored result, or a conflict. */
  private static Processed storedOutcome(
      Connection c, String consumer, UUID messageId, byte[] payloadSha256, String what) {
    // The insert waited for the other transaction, so its row is committed and visible.
    try (PreparedStatement ps = c.prepareStatement(STORED_FINGERPRINT_AND_RESULT)) {
      ps.setString(1, consumer);
      ps.setObject(2, messageId);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          // purged between the insert and this read: a duplicate without a result
          return new Processed(Outcome.DUPLICATE, Optional.empty());
        }
        byte[] stored = rs.getBytes(1);
        if (stored != null && !java.util.Arrays.equals(stored, payloadSha256)) {
          return new Processed(Outcome.CONFLICT, Optional.empty());
        }
        byte[] result = rs.getBytes(2);
        String type = StoredText.decode(rs.getString(3));
        return new Processed(
            Outcome.DUPLICATE,
            result == null ? Optional.empty() : Optional.of(new Payload(result, type)));
      }
    } catch (SQLException e) {
      throw new InboxException("reading the stored result of " + what + " failed", e);
    }
  }

  @Override
  public Set<UUID> processBatch(String consumer, List<UUID> messageIds, BatchWork work)
      throws Exception {
    requireConsumer(consumer);
    List<UUID> ids = List.copyOf(messageIds); // rejects null and null elements
    Objects.requireNonNull(work, "work");
    if (ids.isEmpty()) {
      return Set.of();
    }
    String what = "a batch of " + ids.size() + " messages of consumer '" + consumer + "'";
    Set<UUID> distinct = Collections.unmodifiableSet(new LinkedHashSet<>(ids));
    if (distinct.size() == ids.size()) {
      Optional<Set<UUID>> applied =
          inTransaction(
              what,
              tx -> {
                if (!claimAllNew(tx, consumer, ids, what)) {
                  // rolled back before the work ran: some id is recorded already (a redelivery)
                  // or was by a concurrent transaction; claimed again below
                  return new TransactionRunner.Step<>(Optional.<Set<UUID>>empty(), false);
                }
                work.run(tx, distinct);
                return new TransactionRunner.Step<>(Optional.of(distinct), true);
              });
      if (applied.isPresent()) {
        return applied.get();
      }
    }
    return inTransaction(
        what,
        tx -> {
          Set<UUID> fresh = claimAll(tx, consumer, ids, what);
          if (fresh.isEmpty()) {
            return new TransactionRunner.Step<>(fresh, false);
          }
          work.run(tx, fresh);
          return new TransactionRunner.Step<>(fresh, true);
        });
  }

  @Override
  public boolean advanceVersion(Connection connection, String entity, long version) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(entity, "entity");
    try {
      if (connection.getAutoCommit()) {
        throw new TransactionRequiredException(
            "advancing the version of entity '"
                + entity
                + "' needs the effect's transaction: call connection.setAutoCommit(false) first,"
                + " or advance it inside InboxStore.processOnce; nothing was written");
      }
      try (PreparedStatement ps = connection.prepareStatement(ADVANCE)) {
        ps.setString(1, StoredText.encode(entity));
        ps.setLong(2, version);
        try (ResultSet rs = ps.executeQuery()) {
          return rs.next();
        }
      }
    } catch (SQLException e) {
      throw new InboxException(
          "advancing the version of entity '" + entity + "' to " + version + " failed", e);
    }
  }

  @Override
  public int purge(String consumer, Duration age, int limit) {
    requireConsumer(consumer);
    Objects.requireNonNull(age, "age");
    if (age.isNegative()) {
      throw new IllegalArgumentException("age must not be negative: " + age);
    }
    if (limit <= 0) {
      throw new IllegalArgumentException("limit must be positive: " + limit);
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(PURGE)) {
      ps.setString(1, consumer);
      ps.setString(2, consumer);
      ps.setDouble(3, age.getSeconds() + age.getNano() / 1e9);
      ps.setInt(4, limit);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new InboxException("purging dedupe records of consumer '" + consumer + "' failed", e);
    }
  }

  private static boolean claim(Connection c, String consumer, UUID id, String what) {
    try (PreparedStatement ps = c.prepareStatement(CLAIM)) {
      ps.setString(1, consumer);
      ps.setObject(2, id);
      return ps.executeUpdate() == 1;
    } catch (SQLException e) {
      throw new InboxException("recording " + what + " in the inbox failed", e);
    }
  }

  /**
   * Records every one of {@code ids} (distinct) with a plain insert; false, with the transaction
   * failed, when one is recorded already. In the common case, no id seen before, this costs
   * PostgreSQL about half of {@link #claimAll}'s {@code ON CONFLICT DO NOTHING RETURNING} (a
   * speculative insertion per row: an index probe before the insert and a confirmation after it;
   * measured with pgbench on 500-row batches: 2.3 against 4.4 us per row).
   */
  private static boolean claimAllNew(Connection c, String consumer, List<UUID> ids, String what) {
    try (PreparedStatement ps = c.prepareStatement(CLAIM_ALL_NEW)) {
      ps.setString(1, consumer);
      ps.setString(2, uuidArray(ids));
      int inserted = ps.executeUpdate();
      if (inserted != ids.size()) {
        throw new InboxException(
            "recording " + what + " in the inbox inserted " + inserted + " rows", null);
      }
      return true;
    } catch (SQLException e) {
      if (UNIQUE_VIOLATION.equals(e.getSQLState())) {
        return false;
      }
      throw new InboxException("recording " + what + " in the inbox failed", e);
    }
  }

  /**
   * The array literal of {@code ids} ({@code {id,id,...}}), bound as text and cast by the server.
   * Written here rather than with {@code Connection.createArrayOf}: pgjdbc encodes a {@code uuid[]}
   * as text too, but checks every character of every element for quoting, which was about a tenth
   * of the batch consumer's worker time in a profile of the batch race (2026-12-03); a UUID's text
   * is hex digits and hyphens only, so it never needs quoting.
   */
  static String uuidArray(List<UUID> ids) {
    StringBuilder b = new StringBuilder(2 + ids.size() * 37);
    b.append('{');
    for (int i = 0; i < ids.size(); i++) {
      if (i > 0) {
        b.append(',');
      }
      b.append(ids.get(i));
    }
    return b.append('}').toString();
  }

  /** The ids this statement recorded, in the order of {@code ids}; unmodifiable. */
  private static Set<UUID> claimAll(Connection c, String consumer, List<UUID> ids, String what) {
    Set<UUID> inserted = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(CLAIM_ALL)) {
      ps.setString(1, consumer);
      ps.setString(2, uuidArray(ids));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          inserted.add(rs.getObject(1, UUID.class));
        }
      }
    } catch (SQLException e) {
      throw new InboxException("recording " + what + " in the inbox failed", e);
    }
    if (inserted.isEmpty()) {
      return Set.of();
    }
    Set<UUID> fresh = new LinkedHashSet<>();
    for (UUID id : ids) {
      if (inserted.contains(id)) {
        fresh.add(id);
      }
    }
    return Collections.unmodifiableSet(fresh);
  }

  /** Runs {@code body} in a new transaction; exceptions of the body propagate after a rollback. */
  private <T> T inTransaction(String what, TransactionRunner.Body<T> body) throws Exception {
    return transactions.inTransaction(what, body);
  }

  /**
   * The inbox's own transactions: a connection of the data source (closed after), committed or
   * rolled back by the inbox, refusing to commit a transaction the work left aborted or ended.
   */
  private static TransactionRunner own(DataSource dataSource) {
    return new TransactionRunner() {
      @Override
      public <T> T inTransaction(String what, Body<T> body) throws Exception {
        return Transactions.forCallerOnNewConnection(
            dataSource,
            what,
            "if the commit did happen anyway, a redelivery is a duplicate",
            conn -> {
              Step<T> step = body.run(conn);
              return new Transactions.Step<>(step.value(), step.commit());
            },
            InboxException::new);
      }
    };
  }

  /**
   * An application's runner, with the check the inbox's own transactions make before committing: a
   * transaction the work left aborted (a failed statement whose exception it caught) or ended is
   * rolled back, never reported as processed.
   */
  private static TransactionRunner checked(TransactionRunner runner) {
    return new TransactionRunner() {
      @Override
      public <T> T inTransaction(String what, Body<T> body) throws Exception {
        return runner.inTransaction(
            what,
            c -> {
              Step<T> step = body.run(c);
              if (step.commit()) {
                RuntimeException refused =
                    Transactions.cannotCommit(c, what, InboxException::new, false);
                if (refused != null) {
                  throw refused;
                }
              }
              return step;
            });
      }
    };
  }

  private static void requireConsumer(String consumer) {
    Objects.requireNonNull(consumer, "consumer");
    if (consumer.isBlank()) {
      throw new IllegalArgumentException("consumer must not be blank");
    }
  }
}
