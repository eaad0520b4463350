package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.verify.TopicReader.Published;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class EpochAuditTest {

  private static Published record(int partition, long offset, int lane, long epoch) {
    return new Published(partition, offset, UUID.randomUUID(), "k", offset, 0, lane, epoch);
  }

  @Test
  void aRecordOfALowerEpochAfterAHigherOneOfItsLaneInItsPartitionIsStale() {
    Map<Integer, List<Published>> topic =
        Map.of(
            0,
            List.of(
                record(0, 0, 7, 1),
                record(0, 1, 7, 2), // the successor
                record(0, 2, 7, 1), // the ex-owner's batch lands after it: stale
                record(0, 3, 8, 1), // another lane: its own history
                record(0, 4, 7, 2)),
            1,
            List.of(record(1, 0, 7, 1))); // another partition: not after epoch 2 there
    assertThat(EpochAudit.stalePublishes(topic, r -> true)).isEqualTo(1);
    assertThat(EpochAudit.stalePublishes(topic, r -> r.offset() != 2)).isZero();
  }

  @Test
  void recordsWithoutTheHeadersAreNotJudgedButCounted() {
    Map<Integer, List<Published>> topic =
        Map.of(
            0,
            List.of(
                record(0, 0, 7, 3), record(0, 1, -1, -1), record(0, 2, 7, 3), record(0, 3, 7, -1)));
    assertThat(EpochAudit.stalePublishes(topic, r -> true)).isZero();
    assertThat(EpochAudit.audit(topic, r -> true)).isEqualTo(new EpochAudit.Result(0, 2));
    assertThat(EpochAudit.audit(topic, r -> r.offset() != 1).unstamped()).isEqualTo(1);
  }

  @Test
  void unstampedRecordsMakeAScenarioInconclusiveWhereStalePublishesAreViolations() {
    Findings measuredOnly =
        Findings.builder()
            .messages(10)
            .topicRecords(10)
            .offsetSamples(3)
            .offsetRecordsChecked(3)
            .unstampedRecords(4)
            .build();
    assertThat(measuredOnly.inconclusiveReasons(false)).isEmpty();
    Findings transactional =
        Findings.builder()
            .messages(10)
            .topicRecords(10)
            .offsetSamples(3)
            .offsetRecordsChecked(3)
            .staleIsViolation(true)
            .unstampedRecords(4)
            .build();
    assertThat(transactional.inconclusiveReasons(false))
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .contains("4 records carry no relay lane/epoch header");
    assertThat(transactional.plus(measuredOnly).unstampedRecords()).isEqualTo(8);
  }
}
