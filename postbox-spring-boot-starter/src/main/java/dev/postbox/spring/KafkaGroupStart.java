package dev.postbox.spring;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Before a Kafka listener subscribes (part of {@link KafkaWiring}): its topics must exist, and a
 * new consumer group (no committed offset on any partition of its topics) that is to start at the
 * end ({@code postbox.consumers.start-from: latest}, and no inbox records under its name) gets the
 * topics' end offsets committed, so it reads what is written from now on and never, silently, the
 * whole topic; and nothing written after the application started is skipped while the group joins.
 * A group with any committed offset is left as it is (a partition added later is read from its
 * beginning).
 */
final class KafkaGroupStart {

  private static final Logger log = LoggerFactory.getLogger(KafkaGroupStart.class);
  private static final long TIMEOUT_SECONDS = 30;

  private KafkaGroupStart() {}

  /** The problem (a topic that does not exist), or empty once the group is ready to start. */
  static Optional<String> prepare(
      Map<String, Object> clientConfig, String group, List<String> topics, boolean newAtEnd) {
    Map<String, Object> config = new HashMap<>();
    clientConfig.forEach((k, v) -> {
      if (AdminClientConfig.configNames().contains(k)) {
        config.put(k, v);
      }
    });
    try (Admin admin = Admin.create(config)) {
      Map<String, TopicDescription> described;
      try {
        described =
            admin.describeTopics(topics).allTopicNames().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof UnknownTopicOrPartitionException) {
          return Optional.of(missing(admin, group, topics));
        }
        throw e;
      }
      if (newAtEnd) {
        startAtEnd(admin, group, described);
      }
      return Optional.empty();
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException(
          "cannot look up the topics " + topics + " of consumer '" + group + "'", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted looking up the topics " + topics, e);
    }
  }

  private static String missing(Admin admin, String group, List<String> topics)
      throws ExecutionException, InterruptedException, TimeoutException {
    List<String> absent = new ArrayList<>(topics);
    absent.removeAll(admin.listTopics().names().get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
    return "consumer '"
        + group
        + "': the topic "
        + String.join(", ", absent.isEmpty() ? topics : absent)
        + " does not exist on the broker (create it before the application starts; Postbox does"
        + " not create topics)";
  }

  private static void startAtEnd(Admin admin, String group, Map<String, TopicDescription> described)
      throws ExecutionException, InterruptedException, TimeoutException {
    List<TopicPartition> partitions = new ArrayList<>();
    described
        .values()
        .forEach(d ->
            d.partitions()
                .forEach(p -> partitions.add(new TopicPartition(d.name(), p.partition()))));
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin
            .listConsumerGroupOffsets(group)
            .partitionsToOffsetAndMetadata()
            .get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
    if (partitions.stream().anyMatch(p -> committed.get(p) != null)) {
      return; // not new on these topics
    }
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    partitions.forEach(p -> latest.put(p, OffsetSpec.latest()));
    Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
        admin.listOffsets(latest).all().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
    Map<TopicPartition, OffsetAndMetadata> start = new HashMap<>();
    ends.forEach((p, info) -> start.put(p, new OffsetAndMetadata(info.offset())));
    try {
      admin.alterConsumerGroupOffsets(group, start).all().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
      log.info(
          "consumer '{}' is a new group: it starts at the end of its topics {}"
              + " (postbox.consumers.start-from: latest)",
          group,
          start);
    } catch (ExecutionException e) {
      // another instance of the group joined meanwhile: it starts where that one does
      log.info("consumer '{}': the group's start is already being set: {}", group, e.getCause());
    }
  }
}
