package dev.postbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.LongString;
import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.codec.HeaderText;
import dev.postbox.core.spi.CloudEventsBinding;
import dev.postbox.core.spi.CloudEventsBinding.Attribute;
import dev.postbox.core.spi.CloudEventsReader;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.tracing.TraceHeaders;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The one mapping between a {@link Message} and an AMQP 0-9-1 message, following the <a
 * href="https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/amqp-protocol-binding.md">CloudEvents
 * AMQP protocol binding</a> in <b>binary content mode</b>: the payload is the body as is, the
 * envelope travels in application properties (AMQP 0-9-1 headers) named {@code cloudEvents_} plus
 * the attribute, and {@code datacontenttype} in the {@code content_type} property.
 *
 * <table>
 *   <caption>Message fields and AMQP message parts</caption>
 *   <tr><th>Message</th><th>AMQP</th><th>Written</th><th>When read</th></tr>
 *   <tr><td>-</td><td>{@value #CE_SPECVERSION}</td><td>always, {@value #SPEC_VERSION}</td>
 *       <td>required, must be {@value #SPEC_VERSION}</td></tr>
 *   <tr><td>id</td><td>{@value #CE_ID}, and the {@code message_id} property</td>
 *       <td>always, canonical lower-case UUID</td><td>{@value #CE_ID} required, a UUID</td></tr>
 *   <tr><td>source</td><td>{@value #CE_SOURCE}</td><td>always</td><td>required</td></tr>
 *   <tr><td>type</td><td>{@value #CE_TYPE}, and the {@code type} property</td><td>always</td>
 *       <td>{@value #CE_TYPE} required</td></tr>
 *   <tr><td>occurredAt</td><td>{@value #CE_TIME}</td><td>always, RFC 3339 in UTC</td>
 *       <td>RFC 3339 with any offset; if absent, the {@code timestamp} property; else an
 *       error</td></tr>
 *   <tr><td>schemaVersion</td><td>{@value #CE_SCHEMAVERSION}</td><td>always</td>
 *       <td>positive decimal; absent = 1</td></tr>
 *   <tr><td>key</td><td>{@value #CE_PARTITIONKEY}, and the routing key</td><td>when there is
 *       a key (the routing key is then the key's slot, {@link RabbitTopology#routingKey(String)},
 *       else the message id's)</td>
 *       <td>{@value #CE_PARTITIONKEY} if present and not empty, else none</td></tr>
 *   <tr><td>correlationId</td><td>{@value #CE_CORRELATIONID}, and the {@code correlation_id}
 *       property</td><td>when present</td><td>{@value #CE_CORRELATIONID}</td></tr>
 *   <tr><td>causationId</td><td>{@value #CE_CAUSATIONID}</td><td>when present</td>
 *       <td>optional</td></tr>
 *   <tr><td>tenant</td><td>{@value #CE_TENANT}</td><td>when present</td><td>optional</td></tr>
 *   <tr><td>payload content type</td><td>{@code content_type} property</td><td>always</td>
 *       <td>absent = {@value Payload#OCTET_STREAM}</td></tr>
 *   <tr><td>payload bytes</td><td>body</td><td>always</td><td>as is</td></tr>
 *   <tr><td>trace context</td><td>the plain W3C headers {@code traceparent}, {@code tracestate}
 *       and {@value #CE_TRACEPARENT}, {@value #CE_TRACESTATE}</td><td>when present</td>
 *       <td>the plain headers; if absent, the extension's</td></tr>
 *   <tr><td>headers</td><td>plain AMQP headers, same names, string values</td><td>each</td>
 *       <td>every header not named {@code cloudEvents_*}, {@code cloudEvents:*} or {@code pb_*}
 *       (any case) whose value is text, a number or a boolean (broker tables such as {@code
 *       x-death} are not copied)</td></tr>
 *   <tr><td>topic</td><td>the exchange published to (one per topic)</td><td>-</td>
 *       <td>the topic of the queue it was read from</td></tr>
 * </table>
 *
 * <p>Messages are persistent ({@code delivery_mode} 2). The extension attributes have the same
 * names as the Kafka binding's ({@code schemaversion}, {@code partitionkey}, {@code correlationid},
 * {@code causationid}, {@code tenant}); only the prefix is the AMQP binding's. Reading also accepts
 * the binding's older prefix {@code cloudEvents:}.
 *
 * <p><b>Reading is strict.</b> Deliveries are untrusted input: one that does not map to a valid
 * message raises a {@link DecodingException} carrying the body and whatever of id, type and schema
 * version was read; never another exception. The reading is core's {@link CloudEventsReader}, the
 * same as every transport's.
 *
 * <p>Stateless and thread-safe.
 */
public final class RabbitMessages {

  /** The CloudEvents spec version written and accepted. */
  public static final String SPEC_VERSION = CloudEventsReader.SPEC_VERSION;

  /** The prefix of the CloudEvents attributes in AMQP application properties. */
  public static final String PREFIX = "cloudEvents_";

  /** The older prefix of the AMQP binding, accepted when read. */
  public static final String OLD_PREFIX = "cloudEvents:";

  /** Header of the CloudEvents spec version. */
  public static final String CE_SPECVERSION = PREFIX + "specversion";

  /** Header of the message id. */
  public static final String CE_ID = PREFIX + "id";

  /** Header of the source. */
  public static final String CE_SOURCE = PREFIX + "source";

  /** Header of the event type. */
  public static final String CE_TYPE = PREFIX + "type";

  /** Header of the time the event occurred. */
  public static final String CE_TIME = PREFIX + "time";

  /** Header of the schema version (extension {@code schemaversion}). */
  public static final String CE_SCHEMAVERSION = PREFIX + "schemaversion";

  /** Header of the ordering key (extension {@code partitionkey}). */
  public static final String CE_PARTITIONKEY = PREFIX + "partitionkey";

  /** Header of the correlation id (extension {@code correlationid}). */
  public static final String CE_CORRELATIONID = PREFIX + "correlationid";

  /** Header of the causation id (extension {@code causationid}). */
  public static final String CE_CAUSATIONID = PREFIX + "causationid";

  /** Header of the tenant (extension {@code tenant}). */
  public static final String CE_TENANT = PREFIX + "tenant";

  /** Header of the creation trace context (distributed-tracing extension). */
  public static final String CE_TRACEPARENT = PREFIX + "traceparent";

  /** Header of the creation trace state (distributed-tracing extension). */
  public static final String CE_TRACESTATE = PREFIX + "tracestate";

  /**
   * The broker's dead-lettering history of a message; shown to handlers as the text header of the
   * same name ({@code queue=<q>, reason=<r>, count=<n>} per entry, newest first, {@code "; "}
   * between), never used for an attempt budget.
   */
  public static final String X_DEATH = "x-death";

  /** AMQP delivery mode of a persistent message. */
  public static final int PERSISTENT = 2;

  private static final Binding BINDING = new Binding();

  private RabbitMessages() {}

  /**
   * The routing key of {@code message}: the {@linkplain RabbitTopology#routingKey(String) slot} of
   * its ordering key, or of its id when it has none (so that messages without a key spread over the
   * shard queues). The key itself travels in {@value #CE_PARTITIONKEY}.
   */
  public static String routingKey(Message message) {
    return RabbitTopology.routingKey(message.key().orElseGet(() -> message.id().toString()));
  }

  /**
   * The AMQP properties of {@code message} as the relay publishes it at {@code publishedAt}: {@link
   * #toProperties(Message)} with the {@code timestamp} property (whole seconds).
   */
  public static AMQP.BasicProperties toProperties(Message message, Instant publishedAt) {
    Objects.requireNonNull(publishedAt, "publishedAt");
    return toProperties(message)
        .builder()
        .timestamp(new java.util.Date(publishedAt.toEpochMilli()))
        .build();
  }

  /** The AMQP properties (with the CloudEvents headers) of {@code message}. */
  public static AMQP.BasicProperties toProperties(Message message) {
    Objects.requireNonNull(message, "message");
    Map<String, Object> headers = new LinkedHashMap<>();
    for (var h : message.headers().entrySet()) {
      headers.put(h.getKey(), h.getValue());
    }
    headers.put(CE_SPECVERSION, SPEC_VERSION);
    headers.put(CE_ID, message.id().toString());
    headers.put(CE_SOURCE, message.source());
    headers.put(CE_TYPE, message.type());
    headers.put(CE_TIME, HeaderText.formatTime(message.occurredAt()));
    headers.put(CE_SCHEMAVERSION, Integer.toString(message.schemaVersion()));
    message.key().ifPresent(k -> headers.put(CE_PARTITIONKEY, k));
    message.correlationId().ifPresent(v -> headers.put(CE_CORRELATIONID, v));
    message.causationId().ifPresent(v -> headers.put(CE_CAUSATIONID, v));
    message.tenant().ifPresent(v -> headers.put(CE_TENANT, v));
    message.header(TraceHeaders.TRACEPARENT).ifPresent(v -> headers.put(CE_TRACEPARENT, v));
    message.header(TraceHeaders.TRACESTATE).ifPresent(v -> headers.put(CE_TRACESTATE, v));
    return new AMQP.BasicProperties.Builder()
        .contentType(message.payload().contentType())
        .deliveryMode(PERSISTENT)
        .messageId(message.id().toString())
        .type(message.type())
        .correlationId(message.correlationId().orElse(null))
        .headers(headers)
        .build();
  }

  /**
   * The message in a delivery read from a queue of {@code topic}, read strictly as described in the
   * class documentation.
   *
   * @throws DecodingException if the delivery does not map to a valid message
   */
  public static Message fromDelivery(
      String topic, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
    Objects.requireNonNull(topic, "topic");
    return CloudEventsReader.read(
        BINDING, new Delivery(topic, envelope, properties, body == null ? new byte[0] : body));
  }

  /**
   * The headers of a delivery as the dead letters keep them: each text, number or boolean header as
   * UTF-8 text, the content type as {@code content-type}.
   */
  public static List<DeadLetterStore.Header> deadLetterHeaders(AMQP.BasicProperties properties) {
    List<DeadLetterStore.Header> out = new ArrayList<>();
    if (properties == null) {
      return out;
    }
    if (properties.getContentType() != null) {
      out.add(
          new DeadLetterStore.Header(
              "content-type", properties.getContentType().getBytes(StandardCharsets.UTF_8)));
    }
    if (properties.getHeaders() != null) {
      for (var h : properties.getHeaders().entrySet()) {
        byte[] v = rawBytes(h.getValue());
        if (h.getKey() != null && v != null) {
          out.add(new DeadLetterStore.Header(h.getKey(), v));
        }
      }
    }
    return List.copyOf(out);
  }

  /**
   * The AMQP properties of a delivery rebuilt from the headers {@link #deadLetterHeaders} kept (by
   * the dead letters or the parking): {@code content-type} as the content type, every other header
   * as text.
   */
  public static AMQP.BasicProperties storedProperties(List<DeadLetterStore.Header> stored) {
    Map<String, Object> headers = new LinkedHashMap<>();
    String contentType = null;
    for (DeadLetterStore.Header h : stored) {
      if (h.value() == null) {
        continue;
      }
      String text = new String(h.value(), StandardCharsets.UTF_8);
      if (h.name().equals("content-type")) {
        contentType = text;
      } else {
        headers.put(h.name(), text);
      }
    }
    return new AMQP.BasicProperties.Builder().contentType(contentType).headers(headers).build();
  }

  /** The {@code x-death} table list as text: {@code queue=.., reason=.., count=..; ...}. */
  static String describeDeaths(List<?> deaths) {
    StringBuilder b = new StringBuilder();
    for (Object o : deaths) {
      if (!(o instanceof Map<?, ?> death)) {
        continue;
      }
      if (!b.isEmpty()) {
        b.append("; ");
      }
      b.append("queue=")
          .append(death.get("queue"))
          .append(", reason=")
          .append(death.get("reason"))
          .append(", count=")
          .append(death.get("count"));
    }
    return b.toString();
  }

  private static byte[] rawBytes(Object v) {
    if (v instanceof LongString ls) {
      return ls.getBytes();
    }
    if (v instanceof byte[] b) {
      return b.clone();
    }
    if (v instanceof String || v instanceof Number || v instanceof Boolean) {
      return v.toString().getBytes(StandardCharsets.UTF_8);
    }
    return null;
  }

  /** One delivery as read: what the binding reads from. */
  private record Delivery(
      String topic, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {}

  /**
   * The AMQP protocol binding: {@value #PREFIX} (and {@value #OLD_PREFIX}) headers, the {@code
   * content_type} and {@code timestamp} properties; no key of its own (the routing key is a slot).
   */
  private static final class Binding
      implements CloudEventsBinding<Delivery, Map.Entry<String, Object>> {
    private static final Map<String, Attribute> ATTRIBUTES =
        Map.copyOf(Attribute.prefixed(PREFIX, OLD_PREFIX));

    @Override
    public String unit() {
      return "message";
    }

    @Override
    public String describe(Delivery d) {
      Envelope e = d.envelope();
      return "AMQP message from "
          + (e == null
              ? d.topic()
              : d.topic() + " (exchange " + e.getExchange() + ", tag " + e.getDeliveryTag() + ")");
    }

    @Override
    public String headerName(Attribute attribute) {
      return attribute == Attribute.DATACONTENTTYPE
          ? "content_type"
          : PREFIX + attribute.attributeName();
    }

    @Override
    public Map<String, Attribute> attributes() {
      return ATTRIBUTES;
    }

    @Override
    public boolean reserved(String name) {
      String lower = name.toLowerCase(Locale.ROOT);
      return lower.startsWith("cloudevents_")
          || lower.startsWith("cloudevents:")
          || lower.startsWith("pb_");
    }

    @Override
    public Iterable<Map.Entry<String, Object>> headers(Delivery d) {
      Map<String, Object> headers = d.properties() == null ? null : d.properties().getHeaders();
      return headers == null ? List.of() : headers.entrySet();
    }

    @Override
    public String name(Map.Entry<String, Object> header) {
      String name = header.getKey();
      return name != null && name.equalsIgnoreCase(X_DEATH) ? X_DEATH : name;
    }

    /**
     * Text as its bytes, numbers and booleans as text, a timestamp as RFC 3339; {@value #X_DEATH}
     * described (shown to handlers, never trusted); other tables none.
     */
    @Override
    public Object value(Map.Entry<String, Object> header) {
      Object v = header.getValue();
      if (v instanceof LongString ls) {
        return ls.getBytes();
      }
      if (v instanceof byte[] || v instanceof String) {
        return v;
      }
      if (v instanceof Date d) {
        return HeaderText.formatTime(d.toInstant());
      }
      if (v instanceof List<?> deaths) {
        return X_DEATH.equals(name(header)) ? describeDeaths(deaths) : null;
      }
      if (v == null || v instanceof Map<?, ?>) {
        return null;
      }
      return v.toString();
    }

    @Override
    public Optional<String> contentType(Delivery d) {
      return Optional.ofNullable(d.properties() == null ? null : d.properties().getContentType());
    }

    @Override
    public String topic(Delivery d) {
      return d.topic();
    }

    @Override
    public byte[] payload(Delivery d) {
      return d.body();
    }

    @Override
    public Optional<byte[]> key(Delivery d) {
      return Optional.empty();
    }

    @Override
    public Optional<Instant> timestamp(Delivery d) {
      Date t = d.properties() == null ? null : d.properties().getTimestamp();
      return t == null ? Optional.empty() : Optional.of(t.toInstant());
    }
  }
}
