package dev.postbox.demo;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The demo's report. Its JSON keys are a published interface ({@code ./postbox demo --report-json
 * FILE}): keys are only ever added, never renamed or removed.
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
    @JsonProperty("inconclusive") boolean inconclusive) {

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
    return String.join(
        "\n",
        "Postbox demo: the shop's orders service, outbox relays and a consumer",
        String.format("  orders committed           %,d (+ %,d backlog)", orders, backlog),
        String.format("  events committed           %,d", committed),
        String.format("  events published (distinct) %,d", published),
        String.format("  events missing             %,d   (must be 0)", missing),
        String.format("  per-key order violations   %,d   (must be 0)", orderViolations),
        String.format(
            "  duplicates on the topic    %,d   (expected > 0 after a relay crash)",
            topicDuplicates),
        String.format("  unexpected events          %,d   (must be 0)", unexpected),
        String.format("  relays / crashes injected  %d / %d", relays, relayCrashes),
        String.format("  relay throughput (backlog) %,.0f events/s", relayEventsPerS),
        String.format("  orders placed              %,.0f orders/s", ordersPerS),
        String.format(
            "  commit-to-consumer latency p50 %.1f ms, p99 %.1f ms, max %.1f ms",
            publishLatencyMsP50, publishLatencyMsP99, publishLatencyMsMax),
        "  result                     "
            + (ok
                ? "OK"
                : inconclusive ? "INCONCLUSIVE (no relay crash fired)" : "INVARIANT BROKEN"));
  }
}
