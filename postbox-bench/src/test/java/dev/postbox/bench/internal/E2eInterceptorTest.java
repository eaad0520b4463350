package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.kafka.KafkaRecords;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The poll recorder drops the topic's probes and records each message's stamp and poll once. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class E2eInterceptorTest {

  private static final TopicPartition TP = new TopicPartition("t", 0);

  @Test
  void probesAreDroppedAndEachMessagesStampAndPollAreRecorded() {
    UUID id = UUID.randomUUID();
    try (E2eTimes times = E2eTimes.open()) {
      E2eInterceptor interceptor = new E2eInterceptor();
      interceptor.configure(times.consumerProperties());
      ConsumerRecords<byte[], byte[]> polled =
          new ConsumerRecords<>(
              Map.of(TP, List.of(record(0, null, 1_000), record(1, id, 1_234))),
              Map.of(TP, new OffsetAndMetadata(2)));

      ConsumerRecords<byte[], byte[]> kept = interceptor.onConsume(polled);

      assertThat(kept.count()).isEqualTo(1);
      assertThat(kept.records(TP).get(0).offset()).isEqualTo(1);
      assertThat(kept.nextOffsets()).containsEntry(TP, new OffsetAndMetadata(2));
      times.applied(id, 1_300_000);
      E2eFigures.Events events = times.take(Map.of(id, 1_200_000L));
      assertThat(events.size()).isEqualTo(1);
      assertThat(events.ackMicros()[0]).as("the stamp's middle").isEqualTo(1_234_500);
      assertThat(events.receiveMicros()[0]).isPositive();
      assertThat(events.effectMicros()[0]).isEqualTo(1_300_000);
      assertThat(times.effects()).as("take clears the recorder").isZero();
    }
  }

  @Test
  void anEventMissingAnInstantIsLeftOutAndARedeliveryKeepsTheFirstInstants() {
    UUID seen = UUID.randomUUID();
    UUID notApplied = UUID.randomUUID();
    try (E2eTimes times = E2eTimes.open()) {
      times.polled(seen, 10, 10_000);
      times.polled(seen, 20, 20_000); // a redelivery after a rebalance
      times.polled(notApplied, 10, 10_000);
      times.applied(seen, 30_000);
      times.applied(seen, 40_000);

      assertThat(times.effects()).isEqualTo(1);
      E2eFigures.Events events = times.take(Map.of(seen, 5_000L, notApplied, 5_000L));

      assertThat(events.size()).isEqualTo(1);
      assertThat(events.ackMicros()[0]).isEqualTo(10_500);
      assertThat(events.receiveMicros()[0]).isEqualTo(10_000);
      assertThat(events.effectMicros()[0]).isEqualTo(30_000);
    }
  }

  @Test
  void aRecorderWithoutReceiptsTakesEventsWithoutThem() {
    UUID id = UUID.randomUUID();
    UUID unconfirmed = UUID.randomUUID();
    try (E2eTimes times = E2eTimes.open(false)) {
      times.acked(id, 11_000);
      times.acked(id, 12_000); // the relay's resend: the first confirm counts
      times.applied(id, 30_000);
      times.applied(unconfirmed, 30_000);

      E2eFigures.Events events = times.take(Map.of(id, 5_000L, unconfirmed, 5_000L));

      assertThat(events.size()).as("an event without its confirm is left out").isEqualTo(1);
      assertThat(events.ackMicros()[0]).isEqualTo(11_000);
      assertThat(events.receiveMicros()).isNull();
      assertThat(events.effectMicros()[0]).isEqualTo(30_000);
    }
  }

  @Test
  void aClosedRecorderIsNoLongerFound() {
    E2eTimes times = E2eTimes.open();
    String id = (String) times.consumerProperties().get(E2eTimes.RECORDER);
    assertThat(E2eTimes.lookup(id)).isSameAs(times);

    times.close();

    assertThat(E2eTimes.lookup(id)).isNull();
  }

  private static ConsumerRecord<byte[], byte[]> record(long offset, UUID id, long stampMs) {
    RecordHeaders headers = new RecordHeaders();
    if (id != null) {
      headers.add(KafkaRecords.CE_ID, id.toString().getBytes(StandardCharsets.US_ASCII));
    }
    return new ConsumerRecord<>(
        TP.topic(),
        TP.partition(),
        offset,
        stampMs,
        TimestampType.LOG_APPEND_TIME,
        0,
        0,
        null,
        "v".getBytes(StandardCharsets.UTF_8),
        headers,
        Optional.empty());
  }
}
