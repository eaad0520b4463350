package dev.postbox.kafka.internal;

import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.kafka.KafkaRecords;
import java.util.AbstractList;
import java.util.RandomAccess;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/** Turns Kafka records (read or parked) into the engine's {@link Incoming}. Stateless. */
public final class IncomingRecords {

  private IncomingRecords() {}

  /** A record read from Kafka; its message is decoded only when the engine asks. */
  public static Incoming of(ConsumerRecord<byte[], byte[]> r) {
    return new Incoming(
        r.topic(),
        r.partition(),
        r.offset(),
        () -> KafkaRecords.fromRecord(r),
        r.key(),
        r.value(),
        new RecordHeaders(r.headers().toArray()));
  }

  /**
   * A record's headers as the engine's, made when read: only a dead letter or a parked record reads
   * them, and copying every header of every record was 5% of a batch consumer's CPU. Unmodifiable.
   */
  private static final class RecordHeaders extends AbstractList<DeadLetterStore.Header>
      implements RandomAccess {
    private final Header[] headers;

    RecordHeaders(Header[] headers) {
      this.headers = headers;
    }

    @Override
    public DeadLetterStore.Header get(int index) {
      Header h = headers[index];
      return new DeadLetterStore.Header(h.key(), h.value());
    }

    @Override
    public int size() {
      return headers.length;
    }

    // Identity, as the eager copy's elements were (a header's value compares by identity): two
    // records never share headers, and an Incoming's hash stays cheap and stable.
    @Override
    public boolean equals(Object o) {
      return this == o;
    }

    @Override
    public int hashCode() {
      return System.identityHashCode(this);
    }
  }

  /** A parked record, rebuilt as the record it was read as. */
  public static Incoming of(ParkingStore.ParkedRecord p) {
    return of(
        StoredRecords.rebuild(
            p.topic(),
            p.partition(),
            p.offset(),
            ConsumerRecord.NO_TIMESTAMP,
            p.key(),
            p.value(),
            p.headers()));
  }

  /** {@code topic-partition@offset}, for the log. */
  public static String position(ConsumerRecord<?, ?> r) {
    return r.topic() + "-" + r.partition() + "@" + r.offset();
  }
}
