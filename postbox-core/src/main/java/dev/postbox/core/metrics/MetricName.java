package dev.postbox.core.metrics;

import java.util.List;

/**
 * Every metric Postbox reports: its dotted name (Prometheus turns {@code
 * postbox.consumer.processed} into {@code postbox_consumer_processed_total}), kind, base unit, tags
 * and meaning. Ages are in seconds; a gauge of an age is 0 when nothing waits.
 *
 * <p>The consumer's own metrics ({@code postbox.consumer.*}) come from a running {@code
 * KafkaSubscriber}; the {@code postbox.group.*} gauges come from {@code ConsumerLagProbe}, which
 * reads the group's committed offsets from outside, so they keep growing while every consumer of
 * the group is stopped. The {@code postbox.queue.*} gauges come from {@code RabbitLagProbe}, which
 * reads a subscription's queues from the broker. {@code postbox.relay.*} come from a running relay;
 * {@code postbox.outbox.*}, {@code postbox.deadletters.*} and {@code postbox.parked.*} from {@code
 * OperationsProbe}, which reads the tables, and so do {@code postbox.cdc.slot.*} (from the
 * replication slots and the CDC relay's lease table).
 */
public enum MetricName {
  CONSUMER_PROCESSED(
      "postbox.consumer.processed",
      Kind.COUNTER,
      null,
      "Messages applied (for effectively-once: effect committed)",
      "group",
      "topic",
      "partition"),
  CONSUMER_FAILED(
      "postbox.consumer.failed",
      Kind.COUNTER,
      null,
      "Processing attempts that failed (each attempt counted once)",
      "group",
      "topic",
      "partition"),
  CONSUMER_RETRIED(
      "postbox.consumer.retried",
      Kind.COUNTER,
      null,
      "Retries (in place, parked or from retry topics)",
      "group",
      "topic",
      "partition"),
  CONSUMER_DEAD_LETTERED(
      "postbox.consumer.dead.lettered",
      Kind.COUNTER,
      null,
      "Given-up messages stored in the dead-letter store",
      "group",
      "topic",
      "partition"),
  CONSUMER_STORE_REFUSED(
      "postbox.consumer.store.refused",
      Kind.COUNTER,
      null,
      "Writes to the dead-letter or parking store refused for good (a permanent SQLSTATE: text or"
          + " a row the database cannot hold); the record was dead-lettered with what the store"
          + " accepts, never retried forever",
      "group",
      "topic",
      "partition"),
  CONSUMER_DUPLICATES_SUPPRESSED(
      "postbox.consumer.duplicates.suppressed",
      Kind.COUNTER,
      null,
      "Deliveries whose message id the inbox (or the idempotency store) had already recorded"
          + " (nothing applied)",
      "group",
      "topic",
      "partition"),
  CONSUMER_STALE_SKIPPED(
      "postbox.consumer.stale.skipped",
      Kind.COUNTER,
      null,
      "Deliveries whose entity version was not newer than the stored one",
      "group",
      "topic",
      "partition"),
  CONSUMER_UNKNOWN_TYPES(
      "postbox.consumer.unknown.types",
      Kind.COUNTER,
      null,
      "Messages of an unregistered type, ignored",
      "group",
      "topic",
      "partition"),
  CONSUMER_REPLAYS_SKIPPED(
      "postbox.consumer.replays.skipped",
      Kind.COUNTER,
      null,
      "Replayed copies of a dead letter addressed to another consumer (header"
          + " postbox-replay-target), finished without applying them",
      "group",
      "topic",
      "partition"),
  CONSUMER_IDEMPOTENCY_LEASE_EXPIRED(
      "postbox.consumer.idempotency.lease.expired",
      Kind.COUNTER,
      null,
      "DEDUPLICATED: claims of a message id whose previous lease expired without completion or"
          + " release (its holder crashed or hung after claiming, perhaps after the effect: the"
          + " at-risk window, in which the effect may run twice)",
      "group",
      "topic",
      "partition"),
  CONSUMER_IDEMPOTENCY_LEASE_LOST(
      "postbox.consumer.idempotency.lease.lost",
      Kind.COUNTER,
      null,
      "DEDUPLICATED: completions refused because the lease had expired and another holder had"
          + " claimed the message id (the effect may have run twice)",
      "group",
      "topic",
      "partition"),
  CONSUMER_PARKED(
      "postbox.consumer.parked",
      Kind.COUNTER,
      null,
      "Messages moved to ordered parking",
      "group",
      "topic",
      "partition"),
  CONSUMER_OLDEST_UNPROCESSED_AGE(
      "postbox.consumer.oldest.unprocessed.age",
      Kind.GAUGE,
      "seconds",
      "Age (now minus record timestamp) of the first unfinished record this instance read, i.e."
          + " the record at the position it will commit (RabbitMQ: of the oldest unfinished"
          + " delivery of the shard queue, partition = shard); 0 when it has finished all it read",
      "group",
      "topic",
      "partition"),
  CONSUMER_OFFSET_LAG(
      "postbox.consumer.offset.lag",
      Kind.GAUGE,
      "records",
      "Records between this instance's fetch position and the end of the partition, plus those"
          + " read and not finished",
      "group",
      "topic",
      "partition"),
  CONSUMER_HANDLER_TIME(
      "postbox.consumer.handler.time",
      Kind.TIMER,
      null,
      "Time of one processing attempt (handler plus inbox work)",
      "group",
      "topic"),
  CONSUMER_END_TO_END_TIME(
      "postbox.consumer.end.to.end.time",
      Kind.TIMER,
      null,
      "From the message's occurredAt to its effect committing",
      "group",
      "topic"),
  CONSUMER_POLL_LOOP_ALIVE(
      "postbox.consumer.poll.loop.alive",
      Kind.GAUGE,
      null,
      "1 while the subscriber's poll loop runs; 0 once it ended, closed or failed for good (a"
          + " started subscriber at 0 consumes nothing and must be replaced)",
      "group"),
  CONSUMER_MEMBERSHIP_FENCED(
      "postbox.consumer.membership.fenced",
      Kind.GAUGE,
      null,
      "1 while records wait on the membership fence (the poll loop stalled and the member has not"
          + " yet proved that it still belongs to the group), else 0",
      "group"),
  GROUP_OLDEST_UNPROCESSED_AGE(
      "postbox.group.oldest.unprocessed.age",
      Kind.GAUGE,
      "seconds",
      "Age of the record at the group's committed offset (the first one not processed), read from"
          + " outside the consumers; 0 when the group is caught up. Keeps growing while the group"
          + " is stopped",
      "group",
      "topic",
      "partition"),
  GROUP_OFFSET_LAG(
      "postbox.group.offset.lag",
      Kind.GAUGE,
      "records",
      "End offset minus the group's committed offset (includes transaction markers)",
      "group",
      "topic",
      "partition"),
  QUEUE_READY(
      "postbox.queue.ready",
      Kind.GAUGE,
      "messages",
      "Messages ready for delivery in a subscription's queue (partition = shard), read from the"
          + " broker; delivered, unfinished ones not counted",
      "group",
      "topic",
      "partition"),
  QUEUE_CONSUMERS(
      "postbox.queue.consumers",
      Kind.GAUGE,
      null,
      "Consumers of a subscription's queue (partition = shard), read from the broker",
      "group",
      "topic",
      "partition"),
  QUEUE_STALLED(
      "postbox.queue.stalled",
      Kind.GAUGE,
      null,
      "1 while messages are ready in a subscription's queue with no consumer, or (measured in the"
          + " subscriber's process) its oldest unfinished message is older than the probe's"
          + " threshold; else 0",
      "group",
      "topic",
      "partition"),
  RELAY_PUBLISHED(
      "postbox.relay.published",
      Kind.COUNTER,
      null,
      "Rows acknowledged by the broker and marked published",
      "instance"),
  RELAY_PUBLISH_FAILURES(
      "postbox.relay.publish.failures",
      Kind.COUNTER,
      null,
      "Failed publish attempts (each row counted once per attempt)",
      "instance"),
  RELAY_UNPUBLISHABLE(
      "postbox.relay.unpublishable",
      Kind.COUNTER,
      null,
      "Rows the relay could not publish and marked failed (each logged once at WARN); by default"
          + " each holds the later rows of its key, or of its topic, until an operator resolves it",
      "instance"),
  RELAY_LANES_OWNED(
      "postbox.relay.lanes.owned", Kind.GAUGE, null, "Lanes this relay instance owns", "instance"),
  RELAY_PENDING(
      "postbox.relay.pending",
      Kind.GAUGE,
      "rows",
      "Outbox rows waiting to be published, sampled by the relay's heartbeat",
      "instance"),
  RELAY_LAG_AGE(
      "postbox.relay.lag.age",
      Kind.GAUGE,
      "seconds",
      "Age of the oldest pending outbox row, sampled by the relay's heartbeat; 0 when none",
      "instance"),
  RELAY_STUCK(
      "postbox.relay.stuck",
      Kind.GAUGE,
      null,
      "1 when the oldest pending row is older than the relay's stuck threshold, else 0",
      "instance"),
  OUTBOX_PENDING(
      "postbox.outbox.pending", Kind.GAUGE, "rows", "Outbox rows waiting to be published"),
  OUTBOX_OLDEST_PENDING_AGE(
      "postbox.outbox.oldest.pending.age",
      Kind.GAUGE,
      "seconds",
      "Age of the oldest pending outbox row (relay lag as time); 0 when none"),
  OUTBOX_STUCK(
      "postbox.outbox.stuck",
      Kind.GAUGE,
      null,
      "1 when the oldest pending outbox row is older than the probe's stuck threshold, else 0"),
  OUTBOX_FAILED(
      "postbox.outbox.failed",
      Kind.GAUGE,
      "rows",
      "Outbox rows the relay marked failed for good (never published)"),
  OUTBOX_HOLDING(
      "postbox.outbox.holding",
      Kind.GAUGE,
      "rows",
      "Unpublishable outbox rows that hold the later rows of their key (or their topic) until an"
          + " operator retries or skips them (OutboxOperations)"),
  OUTBOX_HELD(
      "postbox.outbox.held",
      Kind.GAUGE,
      "rows",
      "Pending outbox rows waiting behind an unpublishable row of their key or topic"),
  DEAD_LETTERS_PENDING(
      "postbox.deadletters.pending",
      Kind.GAUGE,
      "letters",
      "Dead letters neither replayed nor discarded (a message delivered twice may have two)"),
  DEAD_LETTERS_OLDEST_AGE(
      "postbox.deadletters.oldest.age",
      Kind.GAUGE,
      "seconds",
      "Age of the oldest pending dead letter (since its first failure); 0 when none"),
  PARKED_MESSAGES(
      "postbox.parked.messages", Kind.GAUGE, "messages", "Messages waiting in ordered parking"),
  PARKED_KEYS("postbox.parked.keys", Kind.GAUGE, "keys", "Keys with a parked sequence"),
  PARKED_OLDEST_AGE(
      "postbox.parked.oldest.age",
      Kind.GAUGE,
      "seconds",
      "Age of the oldest parked message (since it was parked); 0 when none"),
  CDC_SLOT_LAG(
      "postbox.cdc.slot.lag",
      Kind.GAUGE,
      "bytes",
      "WAL the CDC relay's replication slot holds back: the server's current WAL position minus the"
          + " slot's confirmed position (NaN when the slot is missing)",
      "slot"),
  CDC_SLOT_LAG_AGE(
      "postbox.cdc.slot.lag.age",
      Kind.GAUGE,
      "seconds",
      "How long the CDC relay's slot has been behind: since the commit of the oldest transaction"
          + " streamed and not confirmed, or since the last lease renewal of its relay (so it keeps"
          + " growing while no relay runs); 0 when the slot holds no WAL back",
      "slot"),
  CDC_SLOT_LOST(
      "postbox.cdc.slot.lost",
      Kind.GAUGE,
      null,
      "1 when the CDC relay's slot is missing (dropped) or invalidated (its WAL removed under"
          + " max_slot_wal_keep_size), else 0",
      "slot"),
  CDC_SLOT_RECOVERIES(
      "postbox.cdc.slot.recoveries",
      Kind.GAUGE,
      null,
      "Times the CDC relay found its slot lost and recovered (created it again and republished"
          + " the outbox's pending rows)",
      "slot");

  /** What kind of instrument a metric is. */
  public enum Kind {
    COUNTER,
    GAUGE,
    TIMER
  }

  private final String metricName;
  private final Kind kind;
  private final String baseUnit;
  private final String description;
  private final List<String> tagNames;

  MetricName(
      String metricName, Kind kind, String baseUnit, String description, String... tagNames) {
    this.metricName = metricName;
    this.kind = kind;
    this.baseUnit = baseUnit;
    this.description = description;
    this.tagNames = List.of(tagNames);
  }

  /** The dotted name, for example {@code postbox.consumer.processed}. */
  public String metricName() {
    return metricName;
  }

  /** The kind of instrument. */
  public Kind kind() {
    return kind;
  }

  /** The base unit ({@code seconds}, {@code rows}...), or null for plain counts. */
  public String baseUnit() {
    return baseUnit;
  }

  /** What the metric means. */
  public String description() {
    return description;
  }

  /** The tags Postbox sets on it, in order. */
  public List<String> tagNames() {
    return tagNames;
  }
}
