package dev.postbox.core.tracing;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The W3C trace context of a message, kept in its headers {@value #TRACEPARENT} and {@value
 * #TRACESTATE}: the outbox stores it with the row (in the headers column), the relay sends it with
 * the record, the consumer continues it, dead letters and parking keep it byte-identical, a replay
 * carries it on.
 *
 * <p>Only the OpenTelemetry API is used: without an OpenTelemetry SDK there is never a valid
 * current span, so {@link #withCurrent} returns the headers unchanged and nothing is stored. On
 * Kafka the context also travels as CloudEvents' distributed-tracing extension ({@code
 * ce_traceparent}, {@code ce_tracestate}), the creation context the OpenTelemetry semantic
 * conventions for CloudEvents ask for; see {@code KafkaRecords}. Stateless and thread-safe.
 */
public final class TraceHeaders {

  /** Header name of the W3C {@code traceparent}. */
  public static final String TRACEPARENT = "traceparent";

  /** Header name of the W3C {@code tracestate}. */
  public static final String TRACESTATE = "tracestate";

  private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();

  private static final TextMapGetter<Map<String, String>> GETTER =
      new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
          return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
          return carrier == null ? null : carrier.get(key);
        }
      };

  private TraceHeaders() {}

  /**
   * {@code headers} plus the current span's trace context, unless they carry one already or there
   * is no valid current span (then {@code headers} itself is returned).
   */
  public static Map<String, String> withCurrent(Map<String, String> headers) {
    if (headers.containsKey(TRACEPARENT)) {
      return headers;
    }
    SpanContext current = Span.current().getSpanContext();
    if (!current.isValid()) {
      return headers;
    }
    return replaced(headers, Context.current());
  }

  /**
   * {@code headers} with their trace context replaced by {@code context}'s span (when it is valid;
   * else unchanged).
   */
  public static Map<String, String> replaced(Map<String, String> headers, Context context) {
    if (!Span.fromContext(context).getSpanContext().isValid()) {
      return headers;
    }
    Map<String, String> out = new LinkedHashMap<>(headers);
    out.remove(TRACEPARENT);
    out.remove(TRACESTATE);
    W3C.inject(context, out, (carrier, key, value) -> carrier.put(key, value));
    return out;
  }

  /**
   * The trace context carried in {@code headers}, as a context whose span is the (remote) producer
   * span; the root context when the headers carry none or it does not parse.
   */
  public static Context extract(Map<String, String> headers) {
    if (!headers.containsKey(TRACEPARENT)) {
      return Context.root();
    }
    return W3C.extract(Context.root(), headers, GETTER);
  }

  /** The span context carried in {@code headers}; invalid when none. */
  public static SpanContext spanContext(Map<String, String> headers) {
    return Span.fromContext(extract(headers)).getSpanContext();
  }
}
