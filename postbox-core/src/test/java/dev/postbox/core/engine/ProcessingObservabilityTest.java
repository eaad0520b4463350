package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.tracing.TraceHeaders;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

/** Spans, MDC and metrics of processing attempts, without a broker. */
class ProcessingObservabilityTest {

  private final InMemorySpanExporter spans = InMemorySpanExporter.create();
  private final OpenTelemetrySdk otel =
      OpenTelemetrySdk.builder()
          .setTracerProvider(
              SdkTracerProvider.builder()
                  .addSpanProcessor(SimpleSpanProcessor.create(spans))
                  .build())
          .build();

  @AfterEach
  void close() {
    otel.close();
  }

  /** Counters in memory. */
  private static final class Counting implements PostboxMetrics {
    final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();
    final Map<String, List<Duration>> times = new ConcurrentHashMap<>();

    @Override
    public Counter counter(MetricName name, Tags tags) {
      AtomicLong c = counts.computeIfAbsent(name + tags.toString(), k -> new AtomicLong());
      return c::addAndGet;
    }

    @Override
    public Timer timer(MetricName name, Tags tags) {
      List<Duration> t = times.computeIfAbsent(name.name(), k -> new CopyOnWriteArrayList<>());
      return t::add;
    }

    @Override
    public void gauge(MetricName name, Tags tags, DoubleSupplier value) {}

    long count(MetricName name, Tags tags) {
      AtomicLong c = counts.get(name + tags.toString());
      return c == null ? 0 : c.get();
    }
  }

  private DeliveryProcessor processor(
      dev.postbox.core.consumer.MessageHandler handler, PostboxMetrics metrics) {
    Subscription sub =
        Subscription.builder("billing")
            .topics("orders")
            .failureHandler(
                FailureHandlers.of(
                    RetryPolicy.builder()
                        .maxAttempts(3)
                        .backoff(new Backoff(Duration.ofMillis(1), Duration.ofMillis(2), 2, 0))
                        .build()))
            .build();
    return DeliveryProcessor.builder(EngineTesting.TRANSPORT, sub)
        .handler(handler)
        .time(
            Clock.systemUTC(),
            dev.postbox.core.time.Ticker.SYSTEM,
            dev.postbox.core.time.Sleeper.SYSTEM)
        .metrics(metrics)
        .openTelemetry(otel)
        .build();
  }

  private static DeliveryProcessor.Incoming incoming(Message m) {
    return new DeliveryProcessor.Incoming("orders", 2, 41, () -> m, null, new byte[0], List.of());
  }

  @Test
  void eachAttemptIsAConsumerSpanContinuingTheProducersTraceWithTheIdsInTheMdc() {
    Span producer = otel.getTracer("test").spanBuilder("place order").startSpan();
    Message m;
    try (Scope ignored = producer.makeCurrent()) {
      Map<String, String> headers = TraceHeaders.withCurrent(Map.of());
      Message.Builder b =
          Message.builder("orders", "order.created")
              .key("o-1")
              .schemaVersion(2)
              .correlationId("checkout-7")
              .jsonPayload("{\"secret\":\"card\"}");
      headers.forEach(b::header);
      m = b.build();
    } finally {
      producer.end();
    }
    assertThat(m.header(TraceHeaders.TRACEPARENT))
        .hasValueSatisfying(v -> assertThat(v).contains(producer.getSpanContext().getTraceId()));

    List<Map<String, String>> mdcSeen = new ArrayList<>();
    List<String> traceSeen = new ArrayList<>();
    Counting metrics = new Counting();
    DeliveryProcessor p =
        processor(
            d -> {
              mdcSeen.add(MDC.getCopyOfContextMap());
              traceSeen.add(Span.current().getSpanContext().getTraceId());
              if (d.attempt() == 1) {
                throw new IllegalStateException("warehouse timed out");
              }
            },
            metrics);
    assertThat(p.process(incoming(m), () -> true)).isTrue();

    assertThat(mdcSeen).hasSize(2);
    assertThat(mdcSeen.get(1))
        .containsEntry("postbox.message_id", m.id().toString())
        .containsEntry("postbox.type", "order.created")
        .containsEntry("postbox.schema_version", "2")
        .containsEntry("postbox.attempt", "2")
        .containsEntry("postbox.correlation_id", "checkout-7")
        .containsEntry("postbox.group", "billing")
        .containsEntry("postbox.topic", "orders")
        .containsEntry("postbox.partition", "2")
        .containsEntry("postbox.offset", "41")
        .containsEntry("postbox.trace_id", producer.getSpanContext().getTraceId());
    assertThat(mdcSeen.get(0)).containsEntry("postbox.attempt", "1");
    assertThat(String.join(",", mdcSeen.get(1).values())).doesNotContain("card");
    assertThat(MDC.get("postbox.message_id")).as("cleared after the attempt").isNull();
    assertThat(traceSeen).containsOnly(producer.getSpanContext().getTraceId());

    List<SpanData> consumer =
        spans.getFinishedSpanItems().stream()
            .filter(s -> s.getKind() == SpanKind.CONSUMER)
            .toList();
    assertThat(consumer).hasSize(2);
    for (SpanData s : consumer) {
      assertThat(s.getName()).isEqualTo("process orders");
      assertThat(s.getTraceId()).isEqualTo(producer.getSpanContext().getTraceId());
      assertThat(s.getParentSpanId()).isEqualTo(producer.getSpanContext().getSpanId());
      assertThat(s.getAttributes().asMap().toString())
          .contains("messaging.consumer.group.name=billing")
          .contains("messaging.system=test-bus")
          .contains("messaging.test-bus.offset=41")
          .contains("messaging.message.id=" + m.id());
    }
    assertThat(consumer.get(0).getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(consumer.get(1).getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);

    Tags p2 = Tags.of("group", "billing", "topic", "orders", "partition", "2");
    assertThat(metrics.count(MetricName.CONSUMER_PROCESSED, p2)).isEqualTo(1);
    assertThat(metrics.count(MetricName.CONSUMER_FAILED, p2)).isEqualTo(1);
    assertThat(metrics.count(MetricName.CONSUMER_RETRIED, p2)).isEqualTo(1);
    assertThat(metrics.times.get(MetricName.CONSUMER_HANDLER_TIME.name())).hasSize(2);
    assertThat(metrics.times.get(MetricName.CONSUMER_END_TO_END_TIME.name())).hasSize(1);
  }

  @Test
  void withoutATraceContextEachAttemptStartsItsOwnTraceAndNothingIsStored() {
    Message m = Message.builder("orders", "order.created").build();
    assertThat(TraceHeaders.withCurrent(m.headers())).isSameAs(m.headers());
    DeliveryProcessor p = processor(d -> {}, PostboxMetrics.noop());
    assertThat(p.process(incoming(m), () -> true)).isTrue();
    assertThat(spans.getFinishedSpanItems()).hasSize(1);
    assertThat(spans.getFinishedSpanItems().get(0).getParentSpanContext().isValid()).isFalse();
  }
}
