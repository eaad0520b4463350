package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.jdbc.MessageTrace;
import dev.postbox.jdbc.MessageTracer;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.Replayer;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/**
 * One message retried, dead-lettered and replayed: its trace by id shows each step in order, and
 * its trace context runs from the producer's span through Kafka, the failed attempts and the replay
 * to the effect.
 */
@PostboxTest
class TraceIT extends Subscribers {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @Test
  void aRetriedDeadLetteredAndReplayedMessageShowsEveryStepInOrderInOneTrace(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 2);
    InMemorySpanExporter spans = InMemorySpanExporter.create();
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers());
        OpenTelemetrySdk otel =
            OpenTelemetrySdk.builder()
                .setTracerProvider(
                    SdkTracerProvider.builder()
                        .addSpanProcessor(SimpleSpanProcessor.create(spans))
                        .build())
                .build();
        Relay relay =
            Relay.builder(
                    PostgresRelayStore.create(ctx.dataSource()),
                    KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
                .pollInterval(Duration.ofMillis(200))
                .build()) {
      // The business transaction, traced: the outbox row keeps its context.
      Span producer = otel.getTracer("shop").spanBuilder("place order").startSpan();
      Message m = Effects.message(topic, "order-7", 1);
      try (Scope ignored = producer.makeCurrent()) {
        Outbox.postgres()
            .inTransaction(
                ctx.dataSource(),
                tx -> {
                  tx.write(m);
                  return null;
                });
      } finally {
        producer.end();
      }
      relay.start();

      DeadLetterStore dead = PostgresDeadLetterStore.create(ctx.dataSource());
      AtomicBoolean warehouseUp = new AtomicBoolean();
      Subscription sub =
          Subscription.builder("inventory")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .failureHandler(
                  FailureHandlers.of(
                      RetryPolicy.builder()
                          .maxAttempts(3)
                          .backoff(new Backoff(Duration.ofMillis(20), Duration.ofMillis(50), 2, 0))
                          .build()))
              .build();
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
              .inbox(PostgresInboxStore.create(ctx.dataSource()))
              .deadLetters(dead)
              .openTelemetry(otel)
              .handler(d -> {
                if (!warehouseUp.get()) {
                  throw new IllegalStateException("warehouse timed out");
                }
                Effects.apply(d.connection().orElseThrow(), "inventory", d);
              }));
      await().atMost(WAIT).until(() -> fx.count("SELECT count(*) FROM postbox_dead_letter") == 1);

      warehouseUp.set(true);
      Replayer replayer =
          Replayer.builder(ctx.dataSource(), dead, KafkaDeadLetters.decoder())
              .by("ops@test")
              .openTelemetry(otel)
              .build();
      long letter = fx.count("SELECT id FROM postbox_dead_letter");
      assertThat(replayer.replay(letter).replayed()).containsExactly(letter);
      await().atMost(WAIT).until(() -> fx.effects("inventory") == 1);

      MessageTrace trace = MessageTracer.postgres(ctx.dataSource()).trace(m.id());
      System.out.println(trace);
      assertThat(trace.steps())
          .extracting(MessageTrace.Step::step)
          .containsExactly(
              "occurred",
              "failed",
              "dead-lettered",
              "replayed",
              "written",
              "published",
              "processed");
      MessageTrace.Step deadLettered = trace.steps().get(2);
      assertThat(deadLettered.by()).isEqualTo("inventory");
      assertThat(deadLettered.attributes())
          .containsEntry("attempts", "3")
          .containsEntry("classification", "RETRIES_EXHAUSTED")
          .containsEntry("status", "REPLAYED");
      assertThat(deadLettered.detail()).contains("warehouse timed out");
      assertThat(trace.steps().get(3).attributes()).containsEntry("by", "ops@test");
      MessageTrace.Step published = trace.steps().get(5);
      List<ConsumerRecord<byte[], byte[]>> records =
          new Shop(ctx.dataSource(), topic)
              .readUntil(ctx.bootstrapServers(), WAIT, got -> got.size() >= 2);
      ConsumerRecord<byte[], byte[]> replayedRecord = records.get(records.size() - 1);
      assertThat(published.attributes())
          .containsEntry("partition", Integer.toString(replayedRecord.partition()))
          .containsEntry("offset", Long.toString(replayedRecord.offset()));
      assertThat(trace.steps().get(6).by()).isEqualTo("inventory");

      // One trace: producer -> 3 failed attempts (children of the producer span) -> replay
      // (child of the producer span, linked to it) -> the successful attempt (child of the replay).
      SpanContext origin = producer.getSpanContext();
      await()
          .atMost(WAIT)
          .until(() ->
              spans.getFinishedSpanItems().stream()
                      .filter(s -> s.getKind() == SpanKind.CONSUMER)
                      .count()
                  == 4);
      List<SpanData> consumer =
          spans.getFinishedSpanItems().stream()
              .filter(s -> s.getKind() == SpanKind.CONSUMER)
              .toList();
      SpanData replay =
          spans.getFinishedSpanItems().stream()
              .filter(s -> s.getName().equals("postbox replay"))
              .findFirst()
              .orElseThrow();
      assertThat(consumer).allMatch(s -> s.getTraceId().equals(origin.getTraceId()));
      // the engine tags its spans with what Kafka's TransportBinding names
      assertThat(consumer)
          .allSatisfy(s ->
              assertThat(s.getAttributes().asMap().toString())
                  .contains("messaging.system=kafka")
                  .contains("messaging.kafka.offset="));
      assertThat(consumer.subList(0, 3))
          .allMatch(s -> s.getParentSpanId().equals(origin.getSpanId()));
      assertThat(consumer.get(3).getParentSpanId()).isEqualTo(replay.getSpanId());
      assertThat(replay.getTraceId()).isEqualTo(origin.getTraceId());
      assertThat(replay.getParentSpanId()).isEqualTo(origin.getSpanId());
      assertThat(replay.getLinks())
          .singleElement()
          .satisfies(l -> assertThat(l.getSpanContext().getSpanId()).isEqualTo(origin.getSpanId()));

      // On the wire: the W3C header and the CloudEvents distributed-tracing extension agree.
      String tp = new String(replayedRecord.headers().lastHeader("traceparent").value());
      assertThat(new String(replayedRecord.headers().lastHeader("ce_traceparent").value()))
          .isEqualTo(tp);
      assertThat(tp).contains(replay.getSpanId());
    }
  }
}
