package dev.postbox.kafka;

import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.codec.HeaderText;
import dev.postbox.core.spi.CloudEventsBinding;
import dev.postbox.core.spi.CloudEventsBinding.Attribute;
import dev.postbox.core.spi.CloudEventsReader;
import dev.postbox.core.tracing.TraceHeaders;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The one mapping between a {@link Message} and a Kafka record, following the <a
 * href="https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/kafka-protocol-binding.md">CloudEvents
 * Kafka protocol binding</a> in <b>binary content mode</b>: the payload is the record value as is,
 * the envelope travels in headers.
 *
 * <table>
 *   <caption>Message fields and record parts</caption>
 *   <tr><th>Message</th><th>Record</th><th>Written</th><th>When read</th></tr>
 *   <tr><td>-</td><td>{@value #CE_SPECVERSION} header</td><td>always, {@value #SPEC_VERSION}</td>
 *       <td>required, must be {@value #SPEC_VERSION}</td></tr>
 *   <tr><td>id</td><td>{@value #CE_ID}</td><td>always, canonical lower-case UUID</td>
 *       <td>required, a UUID in canonical 8-4-4-4-12 form (any version)</td></tr>
 *   <tr><td>source</td><td>{@value #CE_SOURCE}</td><td>always</td>
 *       <td>required, a URI reference</td></tr>
 *   <tr><td>type</td><td>{@value #CE_TYPE}</td><td>always</td><td>required, not blank</td></tr>
 *   <tr><td>occurredAt</td><td>{@value #CE_TIME}</td><td>always, RFC 3339 in UTC ({@code Z}),
 *       nanosecond precision kept</td>
 *       <td>RFC 3339 with any offset; if absent, the record timestamp; if that is absent too,
 *       an error</td></tr>
 *   <tr><td>schemaVersion</td><td>{@value #CE_SCHEMAVERSION} (extension)</td>
 *       <td>always, decimal</td><td>positive decimal without sign or leading zero; absent = 1</td></tr>
 *   <tr><td>key</td><td>record key (UTF-8) and {@value #CE_PARTITIONKEY} (the binding's
 *       partitioning extension)</td><td>both when there is a key; key {@code null} otherwise</td>
 *       <td>{@value #CE_PARTITIONKEY} if present and not empty, else the record key if not
 *       empty, else none</td></tr>
 *   <tr><td>correlationId</td><td>{@value #CE_CORRELATIONID} (extension)</td>
 *       <td>when present</td><td>optional</td></tr>
 *   <tr><td>causationId</td><td>{@value #CE_CAUSATIONID} (extension)</td>
 *       <td>when present</td><td>optional</td></tr>
 *   <tr><td>tenant</td><td>{@value #CE_TENANT} (extension)</td><td>when present</td>
 *       <td>optional</td></tr>
 *   <tr><td>payload content type</td><td>{@value #CONTENT_TYPE} header (the binding's mapping of
 *       {@code datacontenttype})</td><td>always</td>
 *       <td>absent = {@value Payload#OCTET_STREAM}</td></tr>
 *   <tr><td>payload bytes</td><td>record value</td><td>always, possibly empty (never a
 *       tombstone)</td><td>{@code null} = empty</td></tr>
 *   <tr><td>trace context (headers {@code traceparent}, {@code tracestate})</td><td>the
 *       plain W3C headers and {@value #CE_TRACEPARENT}, {@value #CE_TRACESTATE} (the distributed
 *       tracing extension), same values</td><td>when present</td><td>the plain headers; if absent,
 *       the extension's</td></tr>
 *   <tr><td>headers</td><td>plain Kafka headers, same names, UTF-8 values</td><td>each</td>
 *       <td>every header not named {@code ce_*}, {@code pb_*} or {@code content-type} (any
 *       case); headers with a {@code null} value are skipped</td></tr>
 *   <tr><td>topic</td><td>record topic</td><td>-</td><td>-</td></tr>
 * </table>
 *
 * <p>All CloudEvents header names are {@code ce_} plus a lower-case alphanumeric attribute name of
 * at most 20 characters: the specification requires lower-case letters and digits and recommends
 * the length. The schema version is an extension rather than {@code dataschema}, which is a URI
 * naming a schema document; consumers need an ordered integer to choose upcasters. The producer
 * record has no partition (the partitioner hashes the key) and no timestamp: the producer stamps
 * the send time. Stamping {@code occurredAt} instead would make a relay that catches up after an
 * outage write old timestamps, which time-based retention deletes early and brokers may reject
 * ({@code log.message.timestamp.before.max.ms}).
 *
 * <p><b>Reading is strict.</b> Records are untrusted input: a record that does not map to a valid
 * message raises a {@link DecodingException} (permanent: retrying cannot help) carrying a copy of
 * the record value and whatever of id, type and schema version was read; it never raises a {@code
 * NullPointerException} or leaks another exception. Causes: a missing required header, an id that
 * is not a UUID, a spec version other than {@value #SPEC_VERSION}, a schema version or time that
 * does not parse, a header value or key that is not valid UTF-8, a source that is not a URI
 * reference, a structured-mode record ({@code content-type: application/cloudevents...}). Unknown
 * {@code ce_*} headers (other extensions, {@code ce_subject}, {@code ce_dataschema}) are ignored,
 * so newer producers can add attributes. When a header name occurs more than once, <b>the last one
 * wins</b>, as with Kafka's {@link Headers#lastHeader(String)} and the CloudEvents SDK's reader.
 *
 * <p><b>Why not the CloudEvents SDK at runtime.</b> Interoperability with it is proved by tests
 * (records written here are read by {@code io.cloudevents:cloudevents-kafka} 4.0.1 and the other
 * way round) instead of by depending on it: its reader ({@code
 * KafkaMessageFactory.createReader(record).toEvent()}) allocates per record a builder, a {@code
 * CloudEventV1}, a {@code java.net.URI} for the source, an {@code OffsetDateTime}, an extension map
 * and a data wrapper, all to be copied into a {@code Message} at once; reading the headers directly
 * allocates the message and its strings. And {@code cloudevents-kafka} 4.0.1 declares a compile
 * dependency on {@code kafka-clients} 3.0.0 (besides {@code cloudevents-core} and {@code
 * cloudevents-api}): Maven's nearest-wins rule and our dependency management still select our
 * {@code kafka-clients}, so it does not pin the version, but it would put a second, older client
 * version into every user's dependency graph to reconcile, and the SDK is built and tested against
 * 3.0.0, not the 4.x client Postbox uses.
 *
 * <p>Stateless and thread-safe.
 */
public final class KafkaRecords {

  /** The CloudEvents spec version written and accepted. */
  public static final String SPEC_VERSION = CloudEventsReader.SPEC_VERSION;

  /** Header of the CloudEvents spec version. */
  public static final String CE_SPECVERSION = "ce_specversion";

  /** Header of the message id. */
  public static final String CE_ID = "ce_id";

  /** Header of the source. */
  public static final String CE_SOURCE = "ce_source";

  /** Header of the event type. */
  public static final String CE_TYPE = "ce_type";

  /** Header of the time the event occurred. */
  public static final String CE_TIME = "ce_time";

  /** Header of the schema version (extension {@code schemaversion}). */
  public static final String CE_SCHEMAVERSION = "ce_schemaversion";

  /** Header of the ordering key (extension {@code partitionkey}, from the CloudEvents spec). */
  public static final String CE_PARTITIONKEY = "ce_partitionkey";

  /** Header of the correlation id (extension {@code correlationid}). */
  public static final String CE_CORRELATIONID = "ce_correlationid";

  /** Header of the causation id (extension {@code causationid}). */
  public static final String CE_CAUSATIONID = "ce_causationid";

  /** Header of the tenant (extension {@code tenant}). */
  public static final String CE_TENANT = "ce_tenant";

  /**
   * Header of the creation trace context (CloudEvents distributed-tracing extension {@code
   * traceparent}), written with the same value as the W3C {@code traceparent} header.
   */
  public static final String CE_TRACEPARENT = "ce_traceparent";

  /** Header of the creation trace state (distributed-tracing extension {@code tracestate}). */
  public static final String CE_TRACESTATE = "ce_tracestate";

  /** Header of the payload content type. */
  public static final String CONTENT_TYPE = "content-type";

  /**
   * Header the relay adds: the outbox lane of the record's row (decimal text). Reserved ({@code
   * pb_}): never part of the message's headers.
   */
  public static final String PB_RELAY_LANE = dev.postbox.kafka.internal.RelayHeaders.LANE;

  /**
   * Header the relay adds: the epoch of the lane lease under which the record was published
   * (decimal text). In one partition, a record whose epoch is lower than an earlier record's of the
   * same lane was published by an owner that had lost the lane: a stale publish. Reserved.
   */
  public static final String PB_RELAY_EPOCH = dev.postbox.kafka.internal.RelayHeaders.EPOCH;

  private static final byte[] EMPTY = new byte[0];
  private static final byte[] SPEC_VERSION_BYTES = HeaderText.bytes(SPEC_VERSION);
  private static final Binding BINDING = new Binding();

  private KafkaRecords() {}

  /**
   * The record for {@code message}: topic, key, value and headers as in the class documentation;
   * partition and timestamp left to the producer.
   *
   * @throws IllegalArgumentException if {@code occurredAt} is outside the years 0000 to 9999, which
   *     RFC 3339 cannot express
   */
  public static ProducerRecord<byte[], byte[]> toRecord(Message message) {
    Objects.requireNonNull(message, "message");
    RecordHeaders headers = new RecordHeaders();
    headers.add(CE_SPECVERSION, SPEC_VERSION_BYTES);
    headers.add(CE_ID, HeaderText.bytes(message.id().toString()));
    headers.add(CE_SOURCE, HeaderText.bytes(message.source()));
    headers.add(CE_TYPE, HeaderText.bytes(message.type()));
    headers.add(CE_TIME, HeaderText.bytes(HeaderText.formatTime(message.occurredAt())));
    headers.add(CE_SCHEMAVERSION, HeaderText.bytes(Integer.toString(message.schemaVersion())));
    headers.add(CONTENT_TYPE, HeaderText.bytes(message.payload().contentType()));
    byte[] key = null;
    if (message.key().isPresent()) {
      key = HeaderText.bytes(message.key().get());
      headers.add(CE_PARTITIONKEY, key.clone());
    }
    message.correlationId().ifPresent(v -> headers.add(CE_CORRELATIONID, HeaderText.bytes(v)));
    message.causationId().ifPresent(v -> headers.add(CE_CAUSATIONID, HeaderText.bytes(v)));
    message.tenant().ifPresent(v -> headers.add(CE_TENANT, HeaderText.bytes(v)));
    for (var h : message.headers().entrySet()) {
      headers.add(h.getKey(), HeaderText.bytes(h.getValue()));
    }
    message
        .header(TraceHeaders.TRACEPARENT)
        .ifPresent(v -> headers.add(CE_TRACEPARENT, HeaderText.bytes(v)));
    message
        .header(TraceHeaders.TRACESTATE)
        .ifPresent(v -> headers.add(CE_TRACESTATE, HeaderText.bytes(v)));
    return new ProducerRecord<>(
        message.topic(), null, null, key, message.payload().bytes(), headers);
  }

  /**
   * The message in {@code record}, read strictly as described in the class documentation (by core's
   * {@link CloudEventsReader}, the same reading as every transport's).
   *
   * @throws DecodingException if the record does not map to a valid message
   */
  public static Message fromRecord(ConsumerRecord<byte[], byte[]> record) {
    Objects.requireNonNull(record, "record");
    return CloudEventsReader.read(BINDING, record);
  }

  /**
   * The Kafka protocol binding: {@code ce_*} headers, the {@value #CONTENT_TYPE} header, the record
   * key and timestamp; header values handed over as their bytes (the reader reads the id and time
   * straight from them).
   */
  private static final class Binding
      implements CloudEventsBinding<ConsumerRecord<byte[], byte[]>, Header> {
    private static final Map<String, Attribute> ATTRIBUTES = attributes(Attribute.prefixed("ce_"));

    private static Map<String, Attribute> attributes(Map<String, Attribute> prefixed) {
      Map<String, Attribute> all = new HashMap<>(prefixed);
      all.put(CONTENT_TYPE, Attribute.DATACONTENTTYPE);
      return Map.copyOf(all);
    }

    @Override
    public String unit() {
      return "record";
    }

    @Override
    public String describe(ConsumerRecord<byte[], byte[]> record) {
      return "Kafka record " + record.topic() + "-" + record.partition() + "@" + record.offset();
    }

    @Override
    public String headerName(Attribute attribute) {
      return attribute == Attribute.DATACONTENTTYPE
          ? CONTENT_TYPE
          : "ce_" + attribute.attributeName();
    }

    @Override
    public Map<String, Attribute> attributes() {
      return ATTRIBUTES;
    }

    @Override
    public boolean reserved(String name) {
      return name.regionMatches(true, 0, "ce_", 0, 3)
          || name.regionMatches(true, 0, "pb_", 0, 3)
          || name.equalsIgnoreCase(CONTENT_TYPE);
    }

    @Override
    public Iterable<Header> headers(ConsumerRecord<byte[], byte[]> record) {
      Headers headers = record.headers();
      return headers != null ? headers : List.of();
    }

    @Override
    public String name(Header header) {
      return header.key();
    }

    @Override
    public Object value(Header header) {
      return header.value();
    }

    @Override
    public Optional<String> contentType(ConsumerRecord<byte[], byte[]> record) {
      return Optional.empty(); // a header
    }

    @Override
    public String topic(ConsumerRecord<byte[], byte[]> record) {
      return record.topic();
    }

    @Override
    public byte[] payload(ConsumerRecord<byte[], byte[]> record) {
      return record.value() != null ? record.value() : EMPTY;
    }

    @Override
    public Optional<byte[]> key(ConsumerRecord<byte[], byte[]> record) {
      return Optional.ofNullable(record.key());
    }

    @Override
    public Optional<Instant> timestamp(ConsumerRecord<byte[], byte[]> record) {
      return record.timestamp() >= 0
          ? Optional.of(Instant.ofEpochMilli(record.timestamp()))
          : Optional.empty();
    }
  }
}
