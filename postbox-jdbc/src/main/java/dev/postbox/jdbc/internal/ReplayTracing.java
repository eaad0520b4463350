package dev.postbox.jdbc.internal;

import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.core.tracing.TraceHeaders;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Context;
import java.util.Map;

/** The replay span of a message written again from a dead letter (see {@link #traced}). */
public final class ReplayTracing {

  private ReplayTracing() {}

  /**
   * The message as replayed: when an OpenTelemetry SDK records, a {@code postbox replay} span (or
   * {@code name}) is made in the message's own trace (child of the context it carries) with a link
   * to that original span context, and the message carries the replay span's context on; without
   * one, the message keeps the context it had. Either way the replay stays in the message's trace.
   *
   * @param openTelemetry null for {@code GlobalOpenTelemetry.get()}
   */
  public static Message traced(
      OpenTelemetry openTelemetry, String name, Message message, DeadLetter letter, String by) {
    OpenTelemetry otel = openTelemetry != null ? openTelemetry : GlobalOpenTelemetry.get();
    Context original = TraceHeaders.extract(message.headers());
    SpanContext originalSpan = Span.fromContext(original).getSpanContext();
    SpanBuilder b =
        otel.getTracer("dev.postbox")
            .spanBuilder(name)
            .setParent(original)
            .setSpanKind(SpanKind.INTERNAL)
            .setAttribute("messaging.message.id", message.id().toString())
            .setAttribute("postbox.dead_letter.id", letter.id())
            .setAttribute("postbox.consumer", letter.letter().consumer())
            .setAttribute("postbox.replayed_by", by);
    if (originalSpan.isValid()) {
      b.addLink(originalSpan, Attributes.of(AttributeKey.stringKey("postbox.link"), "replay_of"));
    }
    Span span = b.startSpan();
    try {
      Map<String, String> headers = TraceHeaders.replaced(message.headers(), original.with(span));
      if (headers == message.headers()) {
        return message;
      }
      Message.Builder mb = message.toBuilder();
      headers.forEach(mb::header);
      return mb.build();
    } finally {
      span.end();
    }
  }
}
