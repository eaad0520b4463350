package dev.postbox.admin.internal;

import dev.postbox.admin.AuditEntry;
import dev.postbox.admin.AuditFilter;
import dev.postbox.admin.DeadLetterDetail;
import dev.postbox.admin.DeadLetterFilter;
import dev.postbox.admin.DeadLetterGroup;
import dev.postbox.admin.DeadLetterSummary;
import dev.postbox.admin.Page;
import dev.postbox.admin.PageRequest;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.Status;
import dev.postbox.jdbc.MessageTracer;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The dead-letter reads of the operations API: groups by fingerprint, filtered pages (newest first,
 * keyset on (first_failure, id)) and one letter's detail. Every filter has an index of migration V3
 * or V12 leading with it and ending with the page order.
 */
public final class DeadLetterQueries {

  static final String SUMMARY_COLUMNS =
      "id, consumer, topic, partition, \"offset\", message_id, type, msg_key, tenant,"
          + " classification, error_class, error_message, fingerprint, attempts, first_failure,"
          + " last_failure, status, replays";

  private final DataSource dataSource;
  private final AuditQueries audit;

  public DeadLetterQueries(DataSource dataSource, AuditQueries audit) {
    this.dataSource = dataSource;
    this.audit = audit;
  }

  /**
   * Groups of the letters {@code filter} matches, newest last failure first: from the counted
   * groups (migration V12) when the filter names only consumer, topic, error class, group and
   * status; else aggregated from the letters.
   */
  public Page<DeadLetterGroup> groups(DeadLetterFilter filter, PageRequest page) {
    boolean counted =
        filter.type().isEmpty()
            && filter.key().isEmpty()
            && filter.tenant().isEmpty()
            && filter.from().isEmpty()
            && filter.to().isEmpty()
            && filter.messageId().isEmpty();
    Statement s;
    if (counted) {
      s =
          new Statement(
                  "SELECT g.*, s.id AS sample_id, s.topic, s.error_message FROM (SELECT fingerprint,"
                      + " sum(letters) AS n,"
                      + " coalesce(sum(letters) FILTER (WHERE status = 'PENDING'), 0) AS pending,"
                      + " min(first_seen) AS first_seen, max(last_seen) AS last_seen,"
                      + " array_agg(DISTINCT consumer ORDER BY consumer) AS consumers,"
                      + " min(error_class) AS error_class FROM postbox_dead_letter_group")
              .where("letters > 0")
              .where("consumer = ?", filter.consumer())
              .where("topic = ?", filter.topic())
              .where("error_class = ?", filter.errorClass())
              .where("fingerprint = ?", filter.fingerprint())
              .where("status = ?", filter.status().map(Enum::name));
    } else {
      s =
          filtered(
              new Statement(
                  "SELECT g.*, s.id AS sample_id, s.topic, s.error_message FROM (SELECT fingerprint,"
                      + " count(*) AS n, count(*) FILTER (WHERE status = 'PENDING') AS pending,"
                      + " min(first_failure) AS first_seen, max(last_failure) AS last_seen,"
                      + " array_agg(DISTINCT consumer ORDER BY consumer) AS consumers,"
                      + " min(error_class) AS error_class FROM postbox_dead_letter"),
              filter);
    }
    s.then(" GROUP BY fingerprint");
    if (page.after().isPresent()) {
      Cursors.Key k = Cursors.decode(page.after().get());
      s.then(
          counted
              ? " HAVING (max(last_seen), fingerprint) < (?, ?)"
              : " HAVING (max(last_failure), fingerprint) < (?, ?)",
          k.at(),
          k.tie());
    }
    s.then(" ORDER BY last_seen DESC, fingerprint DESC LIMIT ?) g", page.limit() + 1);
    // the newest letter of each group on the page, for its topic and a sample error
    s.then(
        " CROSS JOIN LATERAL (SELECT id, topic, error_message FROM postbox_dead_letter d"
            + " WHERE d.fingerprint = g.fingerprint ORDER BY first_failure DESC, id DESC LIMIT 1) s"
            + " ORDER BY g.last_seen DESC, g.fingerprint DESC");
    List<DeadLetterGroup> rows =
        s.list(
            dataSource,
            "dead-letter groups",
            rs ->
                new DeadLetterGroup(
                    rs.getString("fingerprint"),
                    rs.getLong("n"),
                    rs.getLong("pending"),
                    Statement.instant(rs, "first_seen"),
                    Statement.instant(rs, "last_seen"),
                    Arrays.asList(texts(rs.getArray("consumers"))),
                    rs.getString("error_class"),
                    rs.getString("topic"),
                    Optional.ofNullable(rs.getString("error_message")),
                    rs.getLong("sample_id")));
    return page(rows, page, g -> Cursors.encode(g.lastSeen(), g.fingerprint()));
  }

  /** The letters {@code filter} matches, newest first failure first. */
  public Page<DeadLetterSummary> list(DeadLetterFilter filter, PageRequest page) {
    Statement s =
        filtered(new Statement("SELECT " + SUMMARY_COLUMNS + " FROM postbox_dead_letter"), filter);
    if (page.after().isPresent()) {
      Cursors.Key k = Cursors.decode(page.after().get());
      s.where("(first_failure, id) < (?, ?)", k.at(), Long.parseLong(k.tie()));
    }
    s.then(" ORDER BY first_failure DESC, id DESC LIMIT ?", page.limit() + 1);
    List<DeadLetterSummary> rows = s.list(dataSource, "dead letters", DeadLetterQueries::summary);
    return page(rows, page, d -> Cursors.encode(d.firstFailure(), Long.toString(d.id())));
  }

  /** Ids of the PENDING letters {@code filter} matches, oldest first, at most {@code limit}. */
  public List<Long> pendingIds(DeadLetterFilter filter, int limit) {
    Statement s =
        filtered(
            new Statement("SELECT id FROM postbox_dead_letter"),
            filter.toBuilder().status(Status.PENDING).build());
    s.then(" ORDER BY first_failure, id LIMIT ?", limit);
    return s.list(dataSource, "dead letters", rs -> rs.getLong(1));
  }

  /** One letter with everything about it. */
  public Optional<DeadLetterDetail> detail(long id, MessageTracer tracer) {
    List<DeadLetterDetail> found =
        new Statement(
                "SELECT "
                    + SUMMARY_COLUMNS
                    + ", value, header_names, header_values, stack_trace FROM postbox_dead_letter")
            .where("id = ?", id)
            .list(dataSource, "dead letter " + id, rs -> detail(rs, tracer));
    return found.stream().findFirst();
  }

  private DeadLetterDetail detail(ResultSet rs, MessageTracer tracer) throws SQLException {
    DeadLetterSummary summary = summary(rs);
    String[] names = texts(rs.getArray("header_names"));
    byte[][] values = bytes(rs.getArray("header_values"));
    List<DeadLetterDetail.Header> headers = new ArrayList<>();
    Optional<String> contentType = Optional.empty();
    for (int i = 0; i < names.length; i++) {
      byte[] v = values[i];
      Optional<String> text = v == null ? Optional.of("") : utf8(v);
      headers.add(
          new DeadLetterDetail.Header(
              names[i],
              text.orElseGet(() -> Base64.getEncoder().encodeToString(v)),
              text.isEmpty()));
      if (names[i].equalsIgnoreCase("content-type") && text.isPresent()) {
        contentType = text;
      }
    }
    byte[] value = rs.getBytes("value");
    byte[] payload = value == null ? new byte[0] : value;
    List<DeadLetterDetail.Attempt> history = history(summary);
    List<AuditEntry> actions =
        audit
            .list(
                AuditFilter.all().deadLetter(summary.id()),
                dev.postbox.admin.PageRequest.first(100))
            .items();
    return new DeadLetterDetail(
        summary,
        headers,
        payload,
        utf8(payload),
        contentType,
        Optional.ofNullable(rs.getString("stack_trace")),
        history,
        actions,
        summary.messageId().map(tracer::trace));
  }

  private List<DeadLetterDetail.Attempt> history(DeadLetterSummary s) {
    Statement q =
        new Statement(
            "SELECT id, attempts, first_failure, last_failure, error_class, error_message, status,"
                + " coalesce(replayed_at, discarded_at) AS resolved_at,"
                + " coalesce(replayed_by, discarded_by) AS resolved_by, discard_reason"
                + " FROM postbox_dead_letter");
    if (s.messageId().isPresent()) {
      q.where("consumer = ?", s.consumer()).where("message_id = ?", s.messageId().get());
    } else {
      q.where("id = ?", s.id());
    }
    q.then(" ORDER BY first_failure, id LIMIT 1000");
    return q.list(
        dataSource,
        "the history of dead letter " + s.id(),
        rs ->
            new DeadLetterDetail.Attempt(
                rs.getLong("id"),
                rs.getInt("attempts"),
                Statement.instant(rs, "first_failure"),
                Statement.instant(rs, "last_failure"),
                rs.getString("error_class"),
                Optional.ofNullable(rs.getString("error_message")),
                Status.valueOf(rs.getString("status")),
                Statement.optionalInstant(rs, "resolved_at"),
                Optional.ofNullable(rs.getString("resolved_by")),
                Optional.ofNullable(rs.getString("discard_reason"))));
  }

  static Statement filtered(Statement s, DeadLetterFilter f) {
    return s.where("consumer = ?", f.consumer())
        .where("topic = ?", f.topic())
        .where("type = ?", f.type())
        .where("msg_key = ?", f.key().map(k -> k.getBytes(StandardCharsets.UTF_8)))
        .where("tenant = ?", f.tenant())
        .where("error_class = ?", f.errorClass())
        .where("fingerprint = ?", f.fingerprint())
        .where("status = ?", f.status().map(Enum::name))
        .where("first_failure >= ?", f.from())
        .where("first_failure < ?", f.to())
        .where("message_id = ?", f.messageId());
  }

  static DeadLetterSummary summary(ResultSet rs) throws SQLException {
    byte[] key = rs.getBytes("msg_key");
    return new DeadLetterSummary(
        rs.getLong("id"),
        rs.getString("consumer"),
        rs.getString("topic"),
        rs.getInt("partition"),
        rs.getLong("offset"),
        Optional.ofNullable(rs.getObject("message_id", UUID.class)),
        Optional.ofNullable(rs.getString("type")),
        key == null ? Optional.empty() : Optional.of(new String(key, StandardCharsets.UTF_8)),
        Optional.ofNullable(rs.getString("tenant")),
        Classification.valueOf(rs.getString("classification")),
        rs.getString("error_class"),
        Optional.ofNullable(rs.getString("error_message")),
        rs.getString("fingerprint"),
        rs.getInt("attempts"),
        Statement.instant(rs, "first_failure"),
        Statement.instant(rs, "last_failure"),
        Status.valueOf(rs.getString("status")),
        rs.getInt("replays"));
  }

  /** The first {@code limit} rows and the cursor after the last, if there was one more row. */
  static <T> Page<T> page(
      List<T> rows, PageRequest page, java.util.function.Function<T, String> cursor) {
    if (rows.size() <= page.limit()) {
      return new Page<>(rows, Optional.empty());
    }
    List<T> items = rows.subList(0, page.limit());
    return new Page<>(items, Optional.of(cursor.apply(items.get(items.size() - 1))));
  }

  static Optional<String> utf8(byte[] bytes) {
    try {
      return Optional.of(
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(bytes))
              .toString());
    } catch (CharacterCodingException e) {
      return Optional.empty();
    }
  }

  private static String[] texts(Array a) throws SQLException {
    try {
      return (String[]) a.getArray();
    } finally {
      a.free();
    }
  }

  private static byte[][] bytes(Array a) throws SQLException {
    try {
      return (byte[][]) a.getArray();
    } finally {
      a.free();
    }
  }
}
