package dev.postbox.verify;

import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.common.TopicPartition;

/**
 * The cooperative-sticky assignor (same name, so members agree on it), which also tells the harness
 * every assignment this member receives, with its generation, before any record of it is handed to
 * the application: the exact history the zombie check needs (polling the assignment would miss a
 * partition lost and regained between two polls).
 */
public final class RecordingAssignor extends CooperativeStickyAssignor {

  /** Receives each assignment of this JVM's consumer. */
  interface Recorder {
    void assigned(List<TopicPartition> partitions, int generation);
  }

  private static volatile Recorder recorder = (partitions, generation) -> {};

  static void recorder(Recorder r) {
    recorder = r;
  }

  @Override
  public void onAssignment(Assignment assignment, ConsumerGroupMetadata metadata) {
    super.onAssignment(assignment, metadata);
    recorder.assigned(assignment.partitions(), metadata.generationId());
  }
}
