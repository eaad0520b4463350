package dev.postbox.kafka.internal;

import dev.postbox.core.spi.LaneLease;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Stamps a relay record with the lane and the lease epoch it was published under ({@code
 * pb_relay_lane}, {@code pb_relay_epoch}, decimal text), so that a reader can count stale publishes
 * exactly: a record of a lane whose epoch is lower than one already seen for that lane earlier in
 * its partition was sent by an owner that had lost the lane. The names are {@code
 * KafkaRecords.PB_RELAY_LANE} and {@code PB_RELAY_EPOCH}; {@code pb_} headers are reserved, so they
 * never reach a consumer's message headers.
 */
public final class RelayHeaders {

  /** Header of the lane (decimal text). */
  public static final String LANE = "pb_relay_lane";

  /** Header of the lane lease's epoch (decimal text). */
  public static final String EPOCH = "pb_relay_epoch";

  private RelayHeaders() {}

  /**
   * Adds the two headers of {@code lease} to {@code record}; nothing when {@code lease} is null.
   */
  public static ProducerRecord<byte[], byte[]> stamp(
      ProducerRecord<byte[], byte[]> record, LaneLease lease) {
    if (lease != null) {
      record
          .headers()
          .add(LANE, Integer.toString(lease.lane()).getBytes(StandardCharsets.US_ASCII));
      record.headers().add(EPOCH, Long.toString(lease.epoch()).getBytes(StandardCharsets.US_ASCII));
    }
    return record;
  }
}
