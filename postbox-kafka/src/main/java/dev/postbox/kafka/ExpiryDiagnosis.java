package dev.postbox.kafka;

import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.common.errors.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Names the cause of records that expired in the producer. The idempotent producer retries a
 * partition's {@code NOT_ENOUGH_REPLICAS} or missing leader by itself until {@code
 * delivery.timeout.ms}, so what the relay gets is only "Expiring N record(s) ... has passed since
 * batch creation"; the cause was in the Kafka client's own log. After a batch, the cluster is asked
 * about each partition that had an expired record (once per partition), and each such failure is
 * replaced by the cause, with the expiry as its cause: the relay's listener, its log and its last
 * error then say {@code NotEnoughReplicasException: partition orders-0 has 1 in-sync replica(s)
 * ...} instead of a timeout. An expiry the cluster cannot explain stays as it is.
 */
final class ExpiryDiagnosis {

  private static final Logger log = LoggerFactory.getLogger(ExpiryDiagnosis.class);

  private final TopicCheck cluster;

  ExpiryDiagnosis(TopicCheck cluster) {
    this.cluster = cluster;
  }

  /** Replaces the expired outcomes of a batch with their cause where the cluster names one. */
  void explain(PublishOutcome[] outcomes, List<Message> messages, int[] partitions) {
    Map<String, Optional<RuntimeException>> byPartition = new HashMap<>();
    for (int i = 0; i < outcomes.length; i++) {
      if (!(outcomes[i] instanceof PublishOutcome.Failed failed)
          || !(failed.error() instanceof TimeoutException expired)
          || partitions[i] < 0) {
        continue;
      }
      String topic = messages.get(i).topic();
      int partition = partitions[i];
      Optional<RuntimeException> cause =
          byPartition.computeIfAbsent(
              topic + "-" + partition,
              name -> {
                Optional<RuntimeException> why = cluster.whyNotWritable(topic, partition);
                why.ifPresent(e -> log.warn("records expired in the producer: {}", e.getMessage()));
                return why;
              });
      if (cause.isPresent()) {
        RuntimeException named = cause.get();
        RuntimeException copy = withCause(named, expired);
        outcomes[i] = new PublishOutcome.Failed(copy, failed.permanent(), failed.topicWide());
      }
    }
  }

  /** A fresh exception of the cause's type per record, so each carries its own expiry. */
  private static RuntimeException withCause(RuntimeException named, Throwable expired) {
    RuntimeException e =
        named instanceof org.apache.kafka.common.errors.NotEnoughReplicasException
            ? new org.apache.kafka.common.errors.NotEnoughReplicasException(named.getMessage())
            : new org.apache.kafka.common.errors.LeaderNotAvailableException(named.getMessage());
    e.initCause(expired);
    return e;
  }
}
