package dev.postbox.kafka.internal;

import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.kafka.KafkaRecords;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/** Turns Kafka records (read or parked) into the engine's {@link Incoming}. Stateless. */
public final class IncomingRecords {

  private IncomingRecords() {}

  /** A record read from Kafka; its message is decoded only when the engine asks. */
  public static Incoming of(ConsumerRecord<byte[], byte[]> r) {
    List<DeadLetterStore.Header> headers = new ArrayList<>();
    for (Header h : r.headers()) {
      headers.add(new DeadLetterStore.Header(h.key(), h.value()));
    }
    return new Incoming(
        r.topic(),
        r.partition(),
        r.offset(),
        () -> KafkaRecords.fromRecord(r),
        r.key(),
        r.value(),
        List.copyOf(headers));
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
