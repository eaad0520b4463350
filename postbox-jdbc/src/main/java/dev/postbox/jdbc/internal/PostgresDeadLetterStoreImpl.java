package dev.postbox.jdbc.internal;

import dev.postbox.core.codec.StoredText;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.jdbc.DeadLetterException;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * {@link DeadLetterStore} on PostgreSQL. The statements that change a letter also exist as static
 * methods on a caller's connection, for the {@link dev.postbox.jdbc.Replayer}'s transactions.
 */
public final class PostgresDeadLetterStoreImpl implements DeadLetterStore {

  private static final String COLUMNS =
      "id, consumer, topic, partition, \"offset\", message_id, type, msg_key, value, header_names,"
          + " header_values, classification, error_class, error_message, stack_trace, fingerprint,"
          + " attempts, first_failure, last_failure, status, replays, created_at";

  // A new letter of a message that was dead-lettered (and replayed) before carries its replay
  // count over, so the Replayer's maximum stops a message that keeps failing.
  private static final String ADD =
      "INSERT INTO postbox_dead_letter (consumer, topic, partition, \"offset\", message_id, type,"
          + " msg_key, value, header_names, header_values, classification, error_class,"
          + " error_message, stack_trace, fingerprint, attempts, first_failure, last_failure,"
          + " replays) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE("
          + "(SELECT max(replays) FROM postbox_dead_letter WHERE consumer = ? AND message_id = ?),"
          + " 0)) RETURNING id";

  private static final String FIND = "SELECT " + COLUMNS + " FROM postbox_dead_letter WHERE id = ?";

  private static final String LOCK =
      "SELECT status, replays FROM postbox_dead_letter WHERE id = ? FOR UPDATE";

  private static final String MARK_REPLAYED =
      "UPDATE postbox_dead_letter SET status = 'REPLAYED', replays = replays + 1,"
          + " replayed_at = clock_timestamp(), replayed_by = ? WHERE id = ? AND status = 'PENDING'";

  private static final String DISCARD =
      "UPDATE postbox_dead_letter SET status = 'DISCARDED', discarded_at = clock_timestamp(),"
          + " discarded_by = ?, discard_reason = ? WHERE id = ? AND status = 'PENDING'";

  private static final String STATUS = "SELECT status FROM postbox_dead_letter WHERE id = ?";

  private static final String AUDIT =
      "INSERT INTO postbox_replay_audit (by_whom, what, how_many, action, reason)"
          + " VALUES (?, ?, ?, ?, ?)";

  private static final String PURGE =
      "DELETE FROM postbox_dead_letter WHERE id IN (SELECT id FROM postbox_dead_letter"
          + " WHERE last_failure < now() - make_interval(secs => ?) ORDER BY last_failure LIMIT ?)";

  private final DataSource dataSource;

  public PostgresDeadLetterStoreImpl(DataSource dataSource) {
    this.dataSource = dataSource;
    Tables.require(
        dataSource, DeadLetterException::new, "postbox_dead_letter", "postbox_replay_audit");
  }

  /** The data source this store reads and writes. */
  public DataSource dataSource() {
    return dataSource;
  }

  @Override
  public long add(NewDeadLetter letter) {
    validate(letter);
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(ADD)) {
      int i = 1;
      ps.setString(i++, StoredText.encode(letter.consumer()));
      ps.setString(i++, StoredText.encode(letter.topic()));
      ps.setInt(i++, letter.partition());
      ps.setLong(i++, letter.offset());
      ps.setObject(i++, letter.messageId().orElse(null), Types.OTHER);
      ps.setString(i++, StoredText.encode(letter.type().orElse(null)));
      ps.setBytes(i++, letter.key());
      ps.setBytes(i++, letter.value());
      List<Header> headers = letter.headers();
      String[] names = new String[headers.size()];
      byte[][] values = new byte[headers.size()][];
      for (int h = 0; h < names.length; h++) {
        names[h] = StoredText.encode(headers.get(h).name());
        values[h] = headers.get(h).value();
      }
      ps.setArray(i++, c.createArrayOf("text", names));
      ps.setArray(i++, c.createArrayOf("bytea", values));
      ps.setString(i++, letter.classification().name());
      ps.setString(i++, StoredText.encode(letter.errorClass()));
      ps.setString(i++, StoredText.encode(letter.errorMessage()));
      ps.setString(i++, StoredText.encode(letter.stackTrace()));
      ps.setString(i++, StoredText.encode(letter.fingerprint()));
      ps.setInt(i++, letter.attempts());
      ps.setTimestamp(i++, Timestamp.from(letter.firstFailure()));
      ps.setTimestamp(i++, Timestamp.from(letter.lastFailure()));
      ps.setString(i++, StoredText.encode(letter.consumer()));
      ps.setObject(i, letter.messageId().orElse(null), Types.OTHER);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new DeadLetterException(
          "storing the dead letter of "
              + letter.topic()
              + "-"
              + letter.partition()
              + "@"
              + letter.offset()
              + " for consumer '"
              + letter.consumer()
              + "' failed",
          e);
    }
  }

  @Override
  public Optional<DeadLetter> find(long id) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(FIND)) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(read(rs)) : Optional.empty();
      }
    } catch (SQLException e) {
      throw new DeadLetterException("reading dead letter " + id + " failed", e);
    }
  }

  @Override
  public List<DeadLetter> query(Query query) {
    Objects.requireNonNull(query, "query");
    if (query.limit() < 1 || query.limit() > PostgresDeadLetterStore.MAX_LIMIT) {
      throw new IllegalArgumentException(
          "limit must be between 1 and "
              + PostgresDeadLetterStore.MAX_LIMIT
              + ": "
              + query.limit());
    }
    // Only the shape of the SQL depends on which filters are present; every value is a parameter.
    StringBuilder sql = new StringBuilder("SELECT " + COLUMNS + " FROM postbox_dead_letter");
    List<Object> params = new ArrayList<>();
    String glue = " WHERE ";
    if (Objects.requireNonNull(query.consumer(), "consumer").isPresent()) {
      sql.append(glue).append("consumer = ?");
      params.add(StoredText.encode(query.consumer().get()));
      glue = " AND ";
    }
    if (Objects.requireNonNull(query.topic(), "topic").isPresent()) {
      sql.append(glue).append("topic = ?");
      params.add(StoredText.encode(query.topic().get()));
      glue = " AND ";
    }
    if (Objects.requireNonNull(query.key(), "key").isPresent()) {
      sql.append(glue).append("msg_key = ?");
      params.add(query.key().get().getBytes(StandardCharsets.UTF_8));
      glue = " AND ";
    }
    if (Objects.requireNonNull(query.fingerprint(), "fingerprint").isPresent()) {
      sql.append(glue).append("fingerprint = ?");
      params.add(StoredText.encode(query.fingerprint().get()));
      glue = " AND ";
    }
    if (Objects.requireNonNull(query.status(), "status").isPresent()) {
      sql.append(glue).append("status = ?");
      params.add(query.status().get().name());
      glue = " AND ";
    }
    if (Objects.requireNonNull(query.from(), "from").isPresent()) {
      sql.append(glue).append("first_failure >= ?");
      params.add(Timestamp.from(query.from().get()));
      glue = " AND ";
    }
    if (Objects.requireNonNull(query.to(), "to").isPresent()) {
      sql.append(glue).append("first_failure < ?");
      params.add(Timestamp.from(query.to().get()));
    }
    sql.append(" ORDER BY first_failure, id LIMIT ?");
    params.add(query.limit());
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.toString())) {
      for (int i = 0; i < params.size(); i++) {
        Object p = params.get(i);
        if (p instanceof byte[] bytes) {
          ps.setBytes(i + 1, bytes);
        } else {
          ps.setObject(i + 1, p);
        }
      }
      List<DeadLetter> letters = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          letters.add(read(rs));
        }
      }
      return List.copyOf(letters);
    } catch (SQLException e) {
      throw new DeadLetterException("querying dead letters (" + describe(query) + ") failed", e);
    }
  }

  @Override
  public void markReplayed(long id, String by) {
    requireText(by, "by");
    try (Connection c = dataSource.getConnection()) {
      markReplayed(c, id, by);
    } catch (SQLException e) {
      throw new DeadLetterException("marking dead letter " + id + " replayed failed", e);
    }
  }

  @Override
  public void discard(long id, String by, String reason) {
    requireText(by, "by");
    requireText(reason, "reason");
    try (Connection c = dataSource.getConnection()) {
      discard(c, id, by, reason);
    } catch (SQLException e) {
      throw new DeadLetterException("discarding dead letter " + id + " failed", e);
    }
  }

  @Override
  public int purge(Duration age, int limit) {
    Objects.requireNonNull(age, "age");
    if (age.isNegative()) {
      throw new IllegalArgumentException("age must not be negative: " + age);
    }
    if (limit <= 0) {
      throw new IllegalArgumentException("limit must be positive: " + limit);
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(PURGE)) {
      ps.setDouble(1, age.getSeconds() + age.getNano() / 1e9);
      ps.setInt(2, limit);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new DeadLetterException("purging dead letters older than " + age + " failed", e);
    }
  }

  /** Status and replay count of a letter locked until the end of the connection's transaction. */
  public record Locked(Status status, int replays) {}

  /** Locks letter {@code id} in the connection's transaction; empty if there is none. */
  public static Optional<Locked> lock(Connection c, long id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(LOCK)) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next()
            ? Optional.of(new Locked(Status.valueOf(rs.getString(1)), rs.getInt(2)))
            : Optional.empty();
      }
    }
  }

  /** Moves a PENDING letter to REPLAYED on {@code c}; throws if it is unknown or not PENDING. */
  public static void markReplayed(Connection c, long id, String by) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(MARK_REPLAYED)) {
      ps.setString(1, StoredText.encode(by));
      ps.setLong(2, id);
      if (ps.executeUpdate() == 0) {
        throw notPending(c, id, "marked replayed");
      }
    }
  }

  /** Moves a PENDING letter to DISCARDED on {@code c}; throws if it is unknown or not PENDING. */
  public static void discard(Connection c, long id, String by, String reason) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(DISCARD)) {
      ps.setString(1, StoredText.encode(by));
      ps.setString(2, StoredText.encode(reason));
      ps.setLong(3, id);
      if (ps.executeUpdate() == 0) {
        throw notPending(c, id, "discarded");
      }
    }
  }

  /** Writes one audit row on {@code c}. */
  public static void audit(
      Connection c, String by, String what, int howMany, String action, String reason)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(AUDIT)) {
      ps.setString(1, StoredText.encode(by));
      ps.setString(2, StoredText.encode(what));
      ps.setInt(3, howMany);
      ps.setString(4, action);
      ps.setString(5, StoredText.encode(reason));
      ps.executeUpdate();
    }
  }

  /** A readable description of a query's filters, for messages and the audit. */
  public static String describe(Query q) {
    StringBuilder b = new StringBuilder();
    q.consumer().ifPresent(v -> b.append("consumer=").append(v).append(' '));
    q.topic().ifPresent(v -> b.append("topic=").append(v).append(' '));
    q.key().ifPresent(v -> b.append("key=").append(v).append(' '));
    q.fingerprint().ifPresent(v -> b.append("fingerprint=").append(v).append(' '));
    q.status().ifPresent(v -> b.append("status=").append(v).append(' '));
    q.from().ifPresent(v -> b.append("from=").append(v).append(' '));
    q.to().ifPresent(v -> b.append("to=").append(v).append(' '));
    return b.append("limit=").append(q.limit()).toString();
  }

  private static RuntimeException notPending(Connection c, long id, String what)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(STATUS)) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return new NoSuchElementException("no dead letter " + id);
        }
        return new IllegalStateException(
            "dead letter " + id + " is " + rs.getString(1) + ", so it cannot be " + what);
      }
    }
  }

  private static DeadLetter read(ResultSet rs) throws SQLException {
    String[] names = (String[]) array(rs.getArray("header_names"));
    byte[][] values = (byte[][]) array(rs.getArray("header_values"));
    List<Header> headers = new ArrayList<>(names.length);
    for (int i = 0; i < names.length; i++) {
      headers.add(new Header(StoredText.decode(names[i]), values[i]));
    }
    NewDeadLetter letter =
        new NewDeadLetter(
            StoredText.decode(rs.getString("consumer")),
            StoredText.decode(rs.getString("topic")),
            rs.getInt("partition"),
            rs.getLong("offset"),
            Optional.ofNullable(rs.getObject("message_id", UUID.class)),
            Optional.ofNullable(StoredText.decode(rs.getString("type"))),
            rs.getBytes("msg_key"),
            rs.getBytes("value"),
            List.copyOf(headers),
            Classification.valueOf(rs.getString("classification")),
            StoredText.decode(rs.getString("error_class")),
            StoredText.decode(rs.getString("error_message")),
            StoredText.decode(rs.getString("stack_trace")),
            StoredText.decode(rs.getString("fingerprint")),
            rs.getInt("attempts"),
            instant(rs, "first_failure"),
            instant(rs, "last_failure"));
    return new DeadLetter(
        rs.getLong("id"),
        letter,
        Status.valueOf(rs.getString("status")),
        rs.getInt("replays"),
        instant(rs, "created_at"));
  }

  private static Object array(Array a) throws SQLException {
    try {
      return a.getArray();
    } finally {
      a.free();
    }
  }

  private static Instant instant(ResultSet rs, String column) throws SQLException {
    return rs.getTimestamp(column).toInstant();
  }

  private static void validate(NewDeadLetter l) {
    Objects.requireNonNull(l, "letter");
    requireText(l.consumer(), "consumer");
    requireText(l.topic(), "topic");
    Objects.requireNonNull(l.messageId(), "messageId");
    Objects.requireNonNull(l.type(), "type");
    Objects.requireNonNull(l.headers(), "headers")
        .forEach(h -> Objects.requireNonNull(h, "header"));
    Objects.requireNonNull(l.classification(), "classification");
    requireText(l.errorClass(), "errorClass");
    requireText(l.fingerprint(), "fingerprint");
    Objects.requireNonNull(l.firstFailure(), "firstFailure");
    Objects.requireNonNull(l.lastFailure(), "lastFailure");
  }

  private static void requireText(String value, String name) {
    Objects.requireNonNull(value, name);
    if (value.isBlank()) {
      throw new IllegalArgumentException(name + " must not be blank");
    }
  }
}
