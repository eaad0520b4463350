package dev.postbox.kafka;

import dev.postbox.kafka.RetryTopicNames.Source;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shared retry topics of an earlier version ({@code <topic>.retry.<tier>}, read by every
 * subscription of the topic), drained on upgrade so that records already in them are not lost.
 *
 * <p>A record in them does not say which subscription failed it. So they are read as the earlier
 * version read them: by each subscription's retry group ({@code <subscription>.retry}) from its
 * committed offsets, and a record that fails again moves on to the subscription's own topics. A
 * partition the group has no committed offset on is one it never read (a subscription created
 * since, or one that had no failure there): it starts at the partition's end, committed at once, so
 * that it never applies the failures of other subscriptions; the records passed over are logged at
 * WARN with their offsets (an operator who knows they are this subscription's resets the group's
 * offsets to them). Only topics that exist at start are read, and nothing is ever written to them.
 */
final class LegacyRetryTopics {

  private static final Logger log = LoggerFactory.getLogger(LegacyRetryTopics.class);

  static final LegacyRetryTopics NONE = new LegacyRetryTopics("", "", Map.of());

  private final String name;
  private final String group;
  private final Map<String, Source> topics;

  private LegacyRetryTopics(String name, String group, Map<String, Source> topics) {
    this.name = name;
    this.group = group;
    this.topics = Map.copyOf(topics);
  }

  /**
   * The legacy retry topics of {@code topics} that exist, but for the subscription's {@code own};
   * logs what they hold for {@code group}.
   */
  static LegacyRetryTopics find(
      Admin admin,
      String name,
      String group,
      Collection<String> topics,
      int tiers,
      Set<String> own) {
    try {
      Set<String> existing = admin.listTopics().names().get(30, TimeUnit.SECONDS);
      Map<String, Source> legacy = RetryTopicNames.legacyRetryTopics(topics, existing, tiers, own);
      if (legacy.isEmpty()) {
        return NONE;
      }
      LegacyRetryTopics found = new LegacyRetryTopics(name, group, legacy);
      found.report(admin);
      return found;
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException(name + ": cannot look for earlier retry topics", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(name + ": interrupted looking for earlier retry topics", e);
    }
  }

  /** Names and sources of the legacy retry topics to read. */
  Map<String, Source> topics() {
    return topics;
  }

  private void report(Admin admin)
      throws ExecutionException, InterruptedException, TimeoutException {
    Map<String, TopicDescription> described =
        admin.describeTopics(topics.keySet()).allTopicNames().get(30, TimeUnit.SECONDS);
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    described.forEach((t, d) ->
        d.partitions()
            .forEach(p -> latest.put(new TopicPartition(t, p.partition()), OffsetSpec.latest())));
    var ends = admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin
            .listConsumerGroupOffsets(group)
            .partitionsToOffsetAndMetadata()
            .get(30, TimeUnit.SECONDS);
    long unread = 0;
    List<String> neverRead = new ArrayList<>();
    for (var e : ends.entrySet()) {
      OffsetAndMetadata c = committed.get(e.getKey());
      long end = e.getValue().offset();
      if (c != null) {
        unread += Math.max(0, end - c.offset());
      } else if (end > 0) {
        neverRead.add(e.getKey().toString());
      }
    }
    String what =
        name
            + ": found the shared retry topics "
            + new TreeSet<>(topics.keySet())
            + " of an earlier Postbox version; "
            + unread
            + " records in them are not yet read by retry group '"
            + group
            + "' and are drained from its committed offsets (a record that fails again moves to"
            + " this subscription's own retry topics)";
    if (!neverRead.isEmpty()) {
      what +=
          "; partitions "
              + neverRead
              + " hold records but were never read by this group: they are started at their"
              + " end (logged when assigned)";
    }
    what +=
        ". Delete these topics once no earlier version runs and every subscription's retry group"
            + " has read them to the end.";
    if (unread > 0 || !neverRead.isEmpty()) {
      log.warn(what);
    } else {
      log.info(what);
    }
  }

  /**
   * On the retry consumer's thread, for newly assigned partitions: a legacy partition the group
   * never committed on starts at its end, committed at once so that a rebalance cannot move it
   * back; records passed over are logged.
   */
  void onAssigned(Consumer<?, ?> consumer, Collection<TopicPartition> assigned) {
    Set<TopicPartition> legacy = new HashSet<>();
    for (TopicPartition tp : assigned) {
      if (topics.containsKey(tp.topic())) {
        legacy.add(tp);
      }
    }
    if (legacy.isEmpty()) {
      return;
    }
    Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(legacy);
    List<TopicPartition> fresh = new ArrayList<>();
    for (TopicPartition tp : legacy) {
      if (committed.get(tp) == null) {
        fresh.add(tp);
      }
    }
    if (fresh.isEmpty()) {
      return;
    }
    Map<TopicPartition, Long> beginnings = consumer.beginningOffsets(fresh);
    consumer.seekToEnd(fresh);
    Map<TopicPartition, OffsetAndMetadata> start = new HashMap<>();
    for (TopicPartition tp : fresh) {
      long end = consumer.position(tp);
      start.put(tp, new OffsetAndMetadata(end));
      long from = beginnings.getOrDefault(tp, end);
      if (end > from) {
        log.warn(
            "{}: retry group '{}' never read the earlier shared retry topic partition {}; its"
                + " records at offsets {}..{} ({}) are passed over as another subscription's"
                + " failures. If they are this subscription's, stop it and reset the group's"
                + " offset on {} to {}",
            name,
            group,
            tp,
            from,
            end - 1,
            end - from,
            tp,
            from);
      }
    }
    consumer.commitSync(start);
  }
}
