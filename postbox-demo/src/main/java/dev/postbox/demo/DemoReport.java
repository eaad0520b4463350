package dev.postbox.demo;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The demo's report. Its JSON keys are a published interface ({@code ./postbox demo --report-json
 * FILE}): keys are only ever added, never renamed or removed.
 *
 * <p>The topic figures ({@code committed} to {@code unexpected}) come from a consumer that reads
 * the whole orders topic; {@code topic_duplicates} includes the second copy of every {@code
 * order.created}, which the relays publish twice on purpose, and the copies a relay crash adds.
 *
 * <p>The inventory figures come from the shop's database after the inventory service stopped (the
 * source of truth, and it survives the injected crash of the inventory process):
 *
 * <ul>
 *   <li>{@code effects_applied}: distinct message ids in {@code inventory_effects}, the audit row
 *       the inventory writes in the transaction of each stock deduction; must equal {@code orders};
 *   <li>{@code duplicate_effects}: rows of {@code inventory_effects} minus distinct message ids
 *       (that table has no unique constraint, so a message applied twice would show here); must be
 *       0;
 *   <li>{@code duplicates_suppressed}: rows of {@code inventory_suppressed}, one per delivery that
 *       the inventory's inbox recognised as already applied (written as soon as the inbox said so,
 *       before the delivery's offset could be committed); must be above 0, which proves duplicates
 *       reached the inventory;
 *   <li>{@code duplicates_delivered}: finished deliveries of {@code order.created} to the inventory
 *       (each left one row: an effect or a suppression) minus distinct messages; the topic's
 *       duplicates plus redeliveries after the inventory's crash. It is {@code
 *       duplicates_suppressed + duplicate_effects} when all is well;
 *   <li>{@code stock_expected}: the seeded stock of all products minus the quantities of all
 *       committed orders; {@code stock_actual}: the sum of the products' stock; must be equal.
 * </ul>
 *
 * <p>The failure figures (poison messages and a warehouse outage, also from the database):
 *
 * <ul>
 *   <li>{@code poison_sent}: poison {@code order.created} written to the outbox, on dedicated keys:
 *       malformed JSON and schema version 3 (only 1 is registered), which no data fix can repair
 *       ({@code poison_unfixable}), and orders of a product the inventory does not know yet;
 *   <li>{@code dead_lettered_before_replay}: distinct messages in {@code postbox_dead_letter} once
 *       the inventory drained; must equal {@code poison_sent} (nothing else, e.g. no parked
 *       message, was given up);
 *   <li>{@code replayed}: distinct messages replayed after the fix (the product is added), through
 *       the outbox with their original ids; {@code applied_after_replay}: those with exactly one
 *       effect; must be equal (and all unknown-product orders);
 *   <li>{@code dead_lettered}: distinct messages still {@code PENDING} in the dead letters at the
 *       end; must equal {@code poison_unfixable} (they are left for a producer fix or a discard);
 *   <li>{@code parked_keys}: keys that had messages parked ({@code postbox_parked}) while the
 *       warehouse was down ({@code outage_seconds}); {@code parked_order_violations}: effects of
 *       those keys applied after an effect of a later order of the key; must be 0.
 * </ul>
 *
 * <p>Observability: {@code metrics} is the demo's Prometheus scrape endpoint (its own gauges and
 * those of the relay and inventory processes, see {@link DemoMetrics}) as scraped at the end,
 * series ({@code name{labels}}) to value, without histogram buckets; it includes {@code
 * postbox_consumer_duplicates_suppressed_total}, {@code
 * postbox_group_oldest_unprocessed_age_seconds} and the relay lag {@code
 * postbox_outbox_oldest_pending_age_seconds}. {@code trace_example} is the trace ({@code ./postbox
 * trace}) of one replayed message: its steps, oldest first, each with {@code at}, {@code step},
 * {@code by}, {@code detail} and {@code attributes}.
 *
 * <p>{@code transport} is the broker the run used: {@code kafka} (the default) or {@code rabbitmq}
 * ({@code --transport rabbitmq}: topics are exchanges sharded by key slot; the wholesale keys are
 * parked in {@code postbox_parked} as on Kafka).
 *
 * <p>Request/reply ({@link PaymentsPhase}): the orders service asks the payments process to
 * authorise each wholesale order's charge. {@code requests_sent}: requests the broker accepted,
 * including {@code requests_resent} sent again with the same id on purpose; {@code
 * replies_received}: requests answered within their timeout; {@code request_timeouts}: requests
 * made to time out (held by payments); {@code late_replies}: their replies, which came afterwards
 * and went to the late-reply listener; {@code replies_received + request_timeouts} must equal
 * {@code requests_sent}. {@code duplicate_charges}: rows of the payments' effect table {@code
 * payment_charges} (no unique constraint) minus the distinct orders charged, must be 0; {@code
 * wholesale_orders_charged}: those distinct orders, must be every wholesale order. {@code
 * payments_crashes}: halts of the payments process between a charge's commit and its reply; {@code
 * rr_p50_ms}/{@code rr_p99_ms}: the round trips of the answered requests, from send to reply (the
 * p99 includes the requests that waited for the payments restart).
 *
 * <p>{@code relay} is the relay the run used: {@code polling} (the default) or {@code cdc} ({@code
 * --relay cdc}: {@link dev.postbox.jdbc.cdc.CdcRelay} processes, one streaming the schema's
 * replication slot, the others standing by; the injected relay crash is {@code
 * cdc.after-ack-before-mark}, armed in every relay's first process and fired once in all, by
 * whichever relay streams when its batch count reaches the armed one). {@code outbox} is where the
 * orders service writes {@code order.created} and the backlog: {@code table} (outbox rows) or
 * {@code emit} ({@code --outbox emit}, CDC only: {@code pg_logical_emit_message}, in the WAL only;
 * the poison messages, the replays and the inventory's {@code stock.updated} stay outbox rows,
 * which the CDC relay streams too).
 *
 * <p>{@code cluster} is true for a run on a cluster ({@code --cluster}: three Kafka brokers, a
 * PostgreSQL primary with a synchronous standby); {@code faults} then lists the faults injected
 * mid-run ({@link ClusterFaults.Fault}: {@code kind}, {@code target}, {@code fired}, {@code at},
 * {@code at_order}, {@code recovery_ms} and {@code steps_ms}), empty otherwise. Every other key
 * means what it means on a single node, and the same invariants hold.
 *
 * <p>{@code ok} requires all of that, the topic checks ({@code missing}, {@code order_violations},
 * {@code unexpected} all 0) and that the injected crashes fired; {@code inconclusive} is true when
 * everything held but an armed crash ({@code relay_crashes}, {@code consumer_crashes}) did not
 * fire, or no key was parked during an outage.
 */
public record DemoReport(
    @JsonProperty("orders") long orders,
    @JsonProperty("backlog") long backlog,
    @JsonProperty("relays") int relays,
    @JsonProperty("committed") long committed,
    @JsonProperty("published") long published,
    @JsonProperty("missing") long missing,
    @JsonProperty("order_violations") long orderViolations,
    @JsonProperty("topic_duplicates") long topicDuplicates,
    @JsonProperty("unexpected") long unexpected,
    @JsonProperty("relay_crashes") int relayCrashes,
    @JsonProperty("relay_events_per_s") double relayEventsPerS,
    @JsonProperty("orders_per_s") double ordersPerS,
    @JsonProperty("publish_latency_ms_p50") double publishLatencyMsP50,
    @JsonProperty("publish_latency_ms_p99") double publishLatencyMsP99,
    @JsonProperty("publish_latency_ms_max") double publishLatencyMsMax,
    @JsonProperty("ok") boolean ok,
    @JsonProperty("inconclusive") boolean inconclusive,
    @JsonProperty("consumer_crashes") int consumerCrashes,
    @JsonProperty("duplicates_delivered") long duplicatesDelivered,
    @JsonProperty("duplicates_suppressed") long duplicatesSuppressed,
    @JsonProperty("effects_applied") long effectsApplied,
    @JsonProperty("duplicate_effects") long duplicateEffects,
    @JsonProperty("stock_expected") long stockExpected,
    @JsonProperty("stock_actual") long stockActual,
    @JsonProperty("poison_sent") long poisonSent,
    @JsonProperty("dead_lettered") long deadLettered,
    @JsonProperty("replayed") long replayed,
    @JsonProperty("applied_after_replay") long appliedAfterReplay,
    @JsonProperty("parked_order_violations") long parkedOrderViolations,
    @JsonProperty("poison_unfixable") long poisonUnfixable,
    @JsonProperty("dead_lettered_before_replay") long deadLetteredBeforeReplay,
    @JsonProperty("parked_keys") long parkedKeys,
    @JsonProperty("outage_seconds") int outageSeconds,
    @JsonProperty("metrics") Map<String, Double> metrics,
    @JsonProperty("trace_example") List<Map<String, Object>> traceExample,
    @JsonProperty("transport") String transport,
    @JsonProperty("requests_sent") long requestsSent,
    @JsonProperty("replies_received") long repliesReceived,
    @JsonProperty("duplicate_charges") long duplicateCharges,
    @JsonProperty("request_timeouts") long requestTimeouts,
    @JsonProperty("late_replies") long lateReplies,
    @JsonProperty("rr_p50_ms") double rrP50Ms,
    @JsonProperty("rr_p99_ms") double rrP99Ms,
    @JsonProperty("payments_crashes") int paymentsCrashes,
    @JsonProperty("requests_resent") long requestsResent,
    @JsonProperty("wholesale_orders_charged") long wholesaleOrdersCharged,
    @JsonProperty("relay") String relay,
    @JsonProperty("outbox") String outbox,
    @JsonProperty("cluster") boolean cluster,
    @JsonProperty("faults") List<ClusterFaults.Fault> faults) {

  public DemoReport {
    metrics = java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(metrics));
    traceExample = List.copyOf(traceExample);
    faults = List.copyOf(faults);
  }

  /** Writes the report as JSON. */
  public void writeJson(Path file) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), this);
  }

  /** The report as a human-readable table. */
  public String toText() {
    return java.util.stream.Stream.of(
            "Postbox demo: the shop's orders and inventory services, outbox relays and a consumer",
            String.format("  transport                  %s", transport),
            String.format("  relay / outbox             %s / %s", relay, outbox),
            String.format("  orders committed           %,d (+ %,d backlog)", orders, backlog),
            String.format("  events committed           %,d", committed),
            String.format("  events published (distinct) %,d", published),
            String.format("  events missing             %,d   (must be 0)", missing),
            String.format("  per-key order violations   %,d   (must be 0)", orderViolations),
            String.format(
                "  duplicates on the topic    %,d   (each order.created is published twice; a relay"
                    + " crash adds more)",
                topicDuplicates),
            String.format("  unexpected events          %,d   (must be 0)", unexpected),
            String.format("  relays / crashes injected  %d / %d", relays, relayCrashes),
            "  inventory service (EFFECTIVELY_ONCE, its own process)",
            String.format(
                "    crashes injected         %d   (between an effect's commit and its offset commit)",
                consumerCrashes),
            String.format("    duplicates delivered     %,d", duplicatesDelivered),
            String.format("    duplicates suppressed    %,d   (must be > 0)", duplicatesSuppressed),
            String.format(
                "    effects applied          %,d   (must equal orders committed)", effectsApplied),
            String.format("    duplicate effects        %,d   (must be 0)", duplicateEffects),
            String.format(
                "    stock expected / actual  %,d / %,d   (must be equal)",
                stockExpected, stockActual),
            "  poison and a warehouse outage (dedicated keys; the other keys flow on)",
            String.format(
                "    poison sent              %,d   (malformed JSON, schema version 3, unknown product)",
                poisonSent),
            String.format(
                "    dead-lettered before replay %,d   (must equal poison sent)",
                deadLetteredBeforeReplay),
            String.format(
                "    replayed after the fix   %,d   (the unknown product added; replayed via the outbox)",
                replayed),
            String.format(
                "    applied after replay     %,d   (exactly once; must equal replayed)",
                appliedAfterReplay),
            String.format(
                "    dead-lettered            %,d   (after replay; must be %d: malformed JSON and unknown version,"
                    + " no data fix helps)",
                deadLettered, poisonUnfixable),
            String.format(
                "    keys parked              %,d   (warehouse down %d s: parked, retried in order after"
                    + " delays)",
                parkedKeys, outageSeconds),
            String.format("    parked keys out of order %,d   (must be 0)", parkedOrderViolations),
            "  payments (request/reply; its own process, halted once between a charge and its reply)",
            String.format(
                "    requests sent            %,d   (%,d again with the same id on purpose)",
                requestsSent, requestsResent),
            String.format(
                "    replies / timeouts       %,d / %,d   (must add up to requests sent)",
                repliesReceived, requestTimeouts),
            String.format(
                "    late replies             %,d   (to the late-reply listener)", lateReplies),
            String.format(
                "    orders charged           %,d   (each wholesale order once)",
                wholesaleOrdersCharged),
            String.format("    duplicate charges        %,d   (must be 0)", duplicateCharges),
            String.format("    payments crashes         %d", paymentsCrashes),
            String.format("    round trip p50 %.1f ms, p99 %.1f ms", rrP50Ms, rrP99Ms),
            String.format("  relay throughput (backlog) %,.0f events/s", relayEventsPerS),
            String.format("  orders placed              %,.0f orders/s", ordersPerS),
            String.format(
                "  commit-to-consumer latency p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                publishLatencyMsP50, publishLatencyMsP99, publishLatencyMsMax),
            faultLines(),
            "  result                     "
                + (ok
                    ? "OK"
                    : inconclusive
                        ? "INCONCLUSIVE (an injected crash or fault did not fire, or no key was"
                            + " parked)"
                        : "INVARIANT BROKEN"))
        .filter(line -> !line.isEmpty())
        .collect(java.util.stream.Collectors.joining("\n"));
  }

  /** The cluster faults, one line each (empty on a single node). */
  private String faultLines() {
    if (!cluster) {
      return "";
    }
    StringBuilder b =
        new StringBuilder(
            "  cluster                    3 Kafka brokers, PostgreSQL + synchronous standby");
    for (ClusterFaults.Fault f : faults) {
      b.append(
          String.format(
              "%n    %-17s %s at order %,d: %s; recovered (consumer) after %,d ms; steps (ms) %s",
              f.kind(),
              f.fired() ? "fired" : "NOT FIRED",
              f.atOrder(),
              f.target(),
              f.recoveryMs(),
              f.stepsMs()));
    }
    return b.toString();
  }
}
