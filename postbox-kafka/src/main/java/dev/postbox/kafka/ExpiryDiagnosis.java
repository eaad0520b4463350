package dev.postbox.kafka;

import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.errors.LeaderNotAvailableException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Names the cause of records that expired in the producer. The idempotent producer retries a
 * partition's {@code NOT_ENOUGH_REPLICAS} or missing leader by itself until {@code
 * delivery.timeout.ms}, so what the relay gets is only "Expiring N record(s) ... has passed since
 * batch creation"; the cause was in the Kafka client's own log. After a batch with expired records,
 * the cluster is asked once per topic about the partitions they were sent to, and each such failure
 * is replaced by its partition's cause, with the expiry as its cause: the relay's listener and log
 * then say {@code NotEnoughReplicasException: partition orders-0 has 1 in-sync replica(s) ...}
 * instead of a timeout. An expiry the cluster does not explain stays as it is; when the cluster
 * does not answer, the rest of the batch is not asked about.
 */
final class ExpiryDiagnosis {

  private static final Logger log = LoggerFactory.getLogger(ExpiryDiagnosis.class);

  private final TopicCheck cluster;

  ExpiryDiagnosis(TopicCheck cluster) {
    this.cluster = cluster;
  }

  /** Replaces the expired outcomes of a batch with their cause where the cluster names one. */
  void explain(PublishOutcome[] outcomes, java.util.List<Message> messages, int[] partitions) {
    Map<String, Set<Integer>> expired = new TreeMap<>();
    for (int i = 0; i < outcomes.length; i++) {
      if (isExpiry(outcomes[i]) && partitions[i] >= 0) {
        expired.computeIfAbsent(messages.get(i).topic(), t -> new TreeSet<>()).add(partitions[i]);
      }
    }
    Map<String, Map<Integer, RuntimeException>> causes = new TreeMap<>();
    for (Map.Entry<String, Set<Integer>> e : expired.entrySet()) {
      Optional<Map<Integer, RuntimeException>> why =
          cluster.whyNotWritable(e.getKey(), e.getValue());
      if (why.isEmpty()) {
        break; // the cluster does not answer: do not wait on it for every topic
      }
      why.get()
          .values()
          .forEach(c -> log.warn("records expired in the producer: {}", c.getMessage()));
      causes.put(e.getKey(), why.get());
    }
    for (int i = 0; i < outcomes.length; i++) {
      if (!isExpiry(outcomes[i])) {
        continue;
      }
      PublishOutcome.Failed failed = (PublishOutcome.Failed) outcomes[i];
      RuntimeException named =
          causes.getOrDefault(messages.get(i).topic(), Map.of()).get(partitions[i]);
      if (named != null) {
        outcomes[i] =
            new PublishOutcome.Failed(
                withCause(named, failed.error()), failed.permanent(), failed.topicWide());
      }
    }
  }

  private static boolean isExpiry(PublishOutcome outcome) {
    return outcome instanceof PublishOutcome.Failed f && f.error() instanceof TimeoutException;
  }

  /** A fresh exception of the cause's type per record, so each carries its own expiry. */
  private static RuntimeException withCause(RuntimeException named, Throwable expired) {
    RuntimeException e =
        named instanceof NotEnoughReplicasException
            ? new NotEnoughReplicasException(named.getMessage())
            : new LeaderNotAvailableException(named.getMessage());
    e.initCause(expired);
    return e;
  }
}
