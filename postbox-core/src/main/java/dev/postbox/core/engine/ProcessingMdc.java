package dev.postbox.core.engine;

import dev.postbox.core.Message;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import org.slf4j.MDC;

/**
 * The SLF4J MDC of one processing attempt, so every line logged while a message is handled (by
 * Postbox or by the handler) says which message, attempt and conversation it belongs to. Payloads
 * are never put here.
 */
final class ProcessingMdc {

  static final String GROUP = "postbox.group";
  static final String MESSAGE_ID = "postbox.message_id";
  static final String TYPE = "postbox.type";
  static final String SCHEMA_VERSION = "postbox.schema_version";
  static final String ATTEMPT = "postbox.attempt";
  static final String CORRELATION_ID = "postbox.correlation_id";
  static final String TOPIC = "postbox.topic";
  static final String PARTITION = "postbox.partition";
  static final String OFFSET = "postbox.offset";
  static final String TRACE_ID = "postbox.trace_id";

  private static final String[] KEYS = {
    GROUP,
    MESSAGE_ID,
    TYPE,
    SCHEMA_VERSION,
    ATTEMPT,
    CORRELATION_ID,
    TOPIC,
    PARTITION,
    OFFSET,
    TRACE_ID
  };

  private ProcessingMdc() {}

  static void put(String group, Incoming in, Message m, int attempt, Span span) {
    MDC.put(GROUP, group);
    MDC.put(MESSAGE_ID, m.id().toString());
    MDC.put(TYPE, m.type());
    MDC.put(SCHEMA_VERSION, Integer.toString(m.schemaVersion()));
    MDC.put(ATTEMPT, Integer.toString(attempt));
    m.correlationId().ifPresent(c -> MDC.put(CORRELATION_ID, c));
    MDC.put(TOPIC, in.topic());
    MDC.put(PARTITION, Integer.toString(in.partition()));
    MDC.put(OFFSET, Long.toString(in.offset()));
    SpanContext sc = span.getSpanContext();
    if (sc.isValid()) {
      MDC.put(TRACE_ID, sc.getTraceId());
    }
  }

  static void clear() {
    for (String k : KEYS) {
      MDC.remove(k);
    }
  }
}
