package dev.postbox.core.engine;

import dev.postbox.core.Message;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.time.Ticker;
import dev.postbox.core.tracing.TraceHeaders;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * What one subscription's processing tells the outside: the counters behind {@link ConsumerStats},
 * the per-partition metrics, and for each attempt a CONSUMER span, the SLF4J MDC and the handler
 * timer. Thread-safe.
 */
final class DeliveryTelemetry {

  final AtomicLong received = new AtomicLong();
  final AtomicLong applied = new AtomicLong();
  final AtomicLong duplicates = new AtomicLong();
  final AtomicLong unknownTypes = new AtomicLong();
  final AtomicLong stale = new AtomicLong();
  final AtomicLong retries = new AtomicLong();
  final AtomicLong givenUp = new AtomicLong();
  final AtomicLong rejected = new AtomicLong();
  final AtomicLong abandoned = new AtomicLong();
  final AtomicLong deadLettered = new AtomicLong();
  final AtomicLong parked = new AtomicLong();
  final AtomicLong unparked = new AtomicLong();
  final AtomicLong leasesExpired = new AtomicLong();
  final AtomicLong leasesLost = new AtomicLong();

  private final String group;
  private final TransportBinding transport;
  private final ConsumerMeters meters;
  private final OpenTelemetry openTelemetry;
  private volatile Tracer tracer;
  private final Clock clock;
  private final Ticker ticker;

  /**
   * Telemetry of consumer group {@code group}; {@code openTelemetry} null means {@link
   * GlobalOpenTelemetry}, looked up at the first attempt.
   */
  DeliveryTelemetry(
      String group,
      TransportBinding transport,
      PostboxMetrics metrics,
      OpenTelemetry openTelemetry,
      Clock clock,
      Ticker ticker) {
    this.group = group;
    this.transport = transport;
    this.meters = new ConsumerMeters(metrics, group);
    this.openTelemetry = openTelemetry;
    this.clock = clock;
    this.ticker = ticker;
  }

  /** The counters. */
  ConsumerStats stats() {
    return new ConsumerStats(
        received.get(),
        applied.get(),
        duplicates.get(),
        unknownTypes.get(),
        stale.get(),
        retries.get(),
        givenUp.get(),
        rejected.get(),
        abandoned.get(),
        deadLettered.get(),
        parked.get(),
        unparked.get(),
        leasesExpired.get(),
        leasesLost.get());
  }

  /** The metrics of {@code in}'s partition. */
  ConsumerMeters.Partition meters(Incoming in) {
    return meters.of(in.topic(), in.partition());
  }

  /** Counts one message applied, and its end-to-end time. */
  void applied(Incoming in, Message message) {
    applied.incrementAndGet();
    meters(in).processed.increment();
    meters
        .timers(in.topic())
        .endToEnd()
        .record(Duration.between(message.occurredAt(), clock.instant()));
  }

  /** Counts {@code n} suppressed duplicates of {@code in}'s partition. */
  void duplicates(Incoming in, int n) {
    duplicates.addAndGet(n);
    meters(in).duplicates.increment(n);
  }

  /** Counts a retry (in place, delayed or parked) of {@code in}. */
  void retried(Incoming in) {
    retries.incrementAndGet();
    meters(in).retried.increment();
  }

  /**
   * Runs one processing attempt inside its span, MDC and handler timer; {@code attempt} returns
   * null when it applied {@code message}, else the failure (recorded on the span).
   */
  Throwable traced(Incoming in, Message message, int attempt, Supplier<Throwable> body) {
    ConsumerMeters.Timers timers = meters.timers(in.topic());
    Span span = startSpan(in, message, attempt);
    ProcessingMdc.put(group, in, message, attempt, span);
    long t0 = ticker.nanos();
    Throwable error = null;
    try (Scope ignored = span.makeCurrent()) {
      error = body.get();
      return error;
    } finally {
      timers.handler().record(ticker.elapsedSince(t0));
      if (error != null) {
        span.recordException(error);
        span.setStatus(StatusCode.ERROR, error.getClass().getSimpleName());
      }
      span.end();
      ProcessingMdc.clear();
    }
  }

  /**
   * One CONSUMER span per processing attempt, a child of the context the message carries (the
   * producer's), named and tagged after the OpenTelemetry messaging conventions.
   */
  private Span startSpan(Incoming in, Message message, int attempt) {
    Tracer t = tracer;
    if (t == null) {
      OpenTelemetry otel = openTelemetry != null ? openTelemetry : GlobalOpenTelemetry.get();
      tracer = t = otel.getTracer("dev.postbox");
    }
    return t.spanBuilder("process " + in.topic())
        .setParent(TraceHeaders.extract(message.headers()))
        .setSpanKind(SpanKind.CONSUMER)
        .setAttribute("messaging.system", transport.messagingSystem())
        .setAttribute("messaging.operation.type", "process")
        .setAttribute("messaging.destination.name", in.topic())
        .setAttribute("messaging.destination.partition.id", Integer.toString(in.partition()))
        .setAttribute(transport.positionAttribute(), in.offset())
        .setAttribute("messaging.consumer.group.name", group)
        .setAttribute("messaging.message.id", message.id().toString())
        .setAttribute("postbox.type", message.type())
        .setAttribute("postbox.attempt", attempt)
        .startSpan();
  }
}
