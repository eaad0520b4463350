package dev.postbox.jdbc.cdc.internal;

import dev.postbox.core.spi.OutboxRecord;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Decodes the messages of PostgreSQL's built-in {@code pgoutput} plugin (protocol version 1) into
 * committed transactions of outbox inserts.
 *
 * <p>pgjdbc hands each message over as raw bytes ({@code PGReplicationStream.read()}) and has no
 * decoder for any output plugin, so this class reads the binary format by hand, as PostgreSQL's
 * documentation ("Logical Replication Message Formats") describes it: Begin {@code 'B'}, Relation
 * {@code 'R'} (the table's OID, schema, name and columns; sent before the first change of a table
 * in a session and again after its definition changes), Insert {@code 'I'} (a tuple of values, in
 * text or, when the stream runs in binary mode, in binary form: {@link TupleData}), Commit {@code
 * 'C'} (the commit LSN and the end LSN). Updates, deletes, truncates, types and origins are
 * skipped: the publication the CDC relay creates publishes inserts only, and the relay marks and
 * deletes rows itself. Column values are read by {@link OutboxTuple}.
 *
 * <p>Inserts of other tables (a publication that holds more than the outbox) are ignored. Not
 * thread-safe: one decoder per replication stream, fed in stream order.
 */
public final class PgOutputDecoder {

  private record Relation(String schema, String name, OutboxTuple tuple) {}

  private static final Instant POSTGRES_EPOCH = Instant.parse("2000-01-01T00:00:00Z");

  private final String schema;
  private final Map<Integer, Relation> relations = new HashMap<>();
  private long beginFinalLsn = -1;
  private Instant commitTime;
  private final List<OutboxRecord> open = new ArrayList<>();

  private final String messagePrefix; // null: logical messages are not outbox messages

  /** A decoder for the outbox table in {@code schema}. */
  public PgOutputDecoder(String schema) {
    this(schema, null);
  }

  /**
   * A decoder for the outbox table in {@code schema} and, when {@code messagePrefix} is not null,
   * for the transactional logical messages with that prefix ({@code EmitMessageOutbox}).
   */
  public PgOutputDecoder(String schema, String messagePrefix) {
    this.schema = schema;
    this.messagePrefix = messagePrefix;
  }

  /**
   * Reads one message; returns the transaction it completes (at a Commit), if any. A message that
   * breaks the protocol throws {@link IllegalStateException}.
   */
  public Optional<CdcTransaction> decode(ByteBuffer message) {
    ByteBuffer b = message.slice();
    if (!b.hasArray()) {
      byte[] copy = new byte[b.remaining()];
      b.get(copy);
      b = ByteBuffer.wrap(copy);
    }
    byte kind = b.get();
    switch (kind) {
      case 'B' -> {
        beginFinalLsn = b.getLong();
        commitTime = postgresTime(b.getLong()); // then xid (int32)
        open.clear();
      }
      case 'R' -> relation(b);
      case 'I' -> insert(b);
      case 'M' -> message(b);
      case 'C' -> {
        b.get(); // flags, unused
        long commitLsn = b.getLong();
        long endLsn = b.getLong();
        if (beginFinalLsn < 0) {
          throw new IllegalStateException("pgoutput: Commit without Begin");
        }
        CdcTransaction tx = new CdcTransaction(commitLsn, endLsn, commitTime, open);
        open.clear();
        beginFinalLsn = -1;
        return Optional.of(tx);
      }
      default -> {
        // 'U', 'D', 'T', 'Y', 'O' and anything newer: nothing the relay publishes
      }
    }
    return Optional.empty();
  }

  /** Whether a transaction has begun and not yet committed (its rows are held until it commits). */
  public boolean inTransaction() {
    return beginFinalLsn >= 0;
  }

  /** Forgets a transaction cut off by a broken connection: the server sends it again in full. */
  public void reset() {
    beginFinalLsn = -1;
    open.clear();
  }

  /** Microseconds since 2000-01-01 UTC (PostgreSQL's epoch) as an instant. */
  static Instant postgresTime(long micros) {
    return POSTGRES_EPOCH.plus(micros, ChronoUnit.MICROS);
  }

  /**
   * A logical message (protocol 1: flags, LSN, prefix, length, content). Only transactional ones
   * with the outbox prefix count; they come between the Begin and the Commit of their transaction,
   * in the order they were emitted among its inserts.
   */
  private void message(ByteBuffer b) {
    boolean transactional = (b.get() & 1) != 0;
    b.getLong(); // the message's LSN
    String prefix = string(b);
    int len = b.getInt();
    if (messagePrefix == null || !transactional || !messagePrefix.equals(prefix)) {
      return;
    }
    if (beginFinalLsn < 0) {
      throw new IllegalStateException("pgoutput: transactional message outside a transaction");
    }
    byte[] content = new byte[len];
    b.get(content);
    open.add(EmittedEnvelope.read(content));
  }

  private void relation(ByteBuffer b) {
    int oid = b.getInt();
    String ns = string(b);
    String name = string(b);
    b.get(); // replica identity
    int columns = b.getShort();
    List<String> names = new ArrayList<>(columns);
    for (int i = 0; i < columns; i++) {
      b.get(); // flags (part of the key)
      names.add(string(b));
      b.getInt(); // type OID
      b.getInt(); // type modifier
    }
    boolean outbox = schema.equals(ns) && OutboxTuple.TABLE.equals(name);
    relations.put(oid, new Relation(ns, name, outbox ? new OutboxTuple(names) : null));
  }

  private void insert(ByteBuffer b) {
    int oid = b.getInt();
    Relation r = relations.get(oid);
    if (r == null) {
      throw new IllegalStateException(
          "pgoutput: Insert for relation " + oid + " before its Relation");
    }
    if (r.tuple() == null) {
      return; // another table of the publication
    }
    if (b.get() != 'N') {
      throw new IllegalStateException("pgoutput: Insert without a new tuple");
    }
    open.add(r.tuple().read(TupleData.read(b)));
  }

  private static String string(ByteBuffer b) {
    int start = b.position();
    int end = start;
    while (b.get(end) != 0) {
      end++;
    }
    String s = new String(b.array(), b.arrayOffset() + start, end - start, StandardCharsets.UTF_8);
    b.position(end + 1);
    return s;
  }
}
