package dev.postbox.core.spi;

import static dev.postbox.core.codec.HeaderText.quote;

import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.codec.HeaderText;
import dev.postbox.core.spi.CloudEventsBinding.Attribute;
import dev.postbox.core.tracing.TraceHeaders;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;

/**
 * The one strict reading of a CloudEvents message in binary content mode into a {@link Message},
 * for every transport: each adapter describes its protocol binding ({@link CloudEventsBinding}) and
 * hands each received message to {@link #read}.
 *
 * <p><b>Reading is strict.</b> Received messages are untrusted input: one that does not map to a
 * valid message raises a {@link DecodingException} (permanent) carrying the payload and the id,
 * type and schema version where they could be read; never another exception. Causes: a structured
 * mode message ({@code datacontenttype application/cloudevents...}), a missing {@code specversion}
 * or one other than {@value #SPEC_VERSION}, a missing or malformed {@code id} (a UUID in canonical
 * 8-4-4-4-12 form, any case), a {@code schemaversion} that is not a positive decimal without sign
 * or leading zero, a missing {@code type} or {@code source}, a {@code time} that is not RFC 3339
 * (absent: the transport's timestamp; neither: an error), a header value or key that is not valid
 * UTF-8, and whatever {@link Message} refuses (a blank type, a source that is not a URI reference,
 * a blank content type). Unknown attributes are ignored so that newer producers can add some. When
 * a header occurs more than once, the last one wins.
 *
 * <p>The trace context: the plain W3C headers ({@code traceparent}, {@code tracestate}) are
 * application headers; only when {@code traceparent} is absent do the distributed-tracing
 * extension's attributes stand for it (a message from another CloudEvents producer). The content
 * type is {@value Payload#OCTET_STREAM} when absent.
 *
 * <p>Per message it allocates the message, its header map and its strings only: the id and the time
 * are read straight from their bytes when they are in the form Postbox writes ({@link
 * HeaderText#canonicalUuid}, {@link HeaderText#utcTime}), and text is decoded once. Stateless and
 * thread-safe.
 */
public final class CloudEventsReader {

  /** The CloudEvents spec version accepted. */
  public static final String SPEC_VERSION = "1.0";

  private static final byte[] SPEC_VERSION_BYTES = HeaderText.bytes(SPEC_VERSION);

  private CloudEventsReader() {}

  /**
   * The message in {@code source}, read strictly as described in the class documentation.
   *
   * @throws DecodingException if it does not map to a valid message
   */
  public static <S, H> Message read(CloudEventsBinding<S, H> binding, S source) {
    Object specVersion = null;
    Object id = null;
    Object eventSource = null;
    Object type = null;
    Object time = null;
    Object schemaVersion = null;
    Object partitionKey = null;
    Object correlationId = null;
    Object causationId = null;
    Object tenant = null;
    Object traceparent = null;
    Object tracestate = null;
    Object contentType = binding.contentType(source).orElse(null);
    Map<String, Attribute> attributes = binding.attributes();
    Map<String, String> app = new HashMap<>();
    for (H h : binding.headers(source)) {
      String name = binding.name(h);
      if (name == null) {
        continue;
      }
      Attribute a = attributes.get(name);
      Object v = value(binding, source, h, name, a);
      if (a == null) {
        if (v != null && !binding.reserved(name)) {
          app.put(name, text(binding, source, name, v));
        }
        continue;
      }
      switch (a) {
        case SPECVERSION -> specVersion = v;
        case ID -> id = v;
        case SOURCE -> eventSource = v;
        case TYPE -> type = v;
        case TIME -> time = v;
        case SCHEMAVERSION -> schemaVersion = v;
        case PARTITIONKEY -> partitionKey = v;
        case CORRELATIONID -> correlationId = v;
        case CAUSATIONID -> causationId = v;
        case TENANT -> tenant = v;
        case TRACEPARENT -> traceparent = v;
        case TRACESTATE -> tracestate = v;
        case DATACONTENTTYPE -> contentType = v;
      }
    }
    Read<S> r = new Read<>(binding, source, type);
    String content = r.contentType(contentType);
    r.specVersion(specVersion);
    r.id(id);
    r.schemaVersion(schemaVersion);
    String typeText = r.required(Attribute.TYPE, r.text(Attribute.TYPE, type));
    String sourceText = r.required(Attribute.SOURCE, r.text(Attribute.SOURCE, eventSource));
    Instant occurredAt = r.time(time);
    String key = r.text(Attribute.PARTITIONKEY, partitionKey);
    String correlation = r.text(Attribute.CORRELATIONID, correlationId);
    String causation = r.text(Attribute.CAUSATIONID, causationId);
    String tenantText = r.text(Attribute.TENANT, tenant);
    traceContext(
        app, r.text(Attribute.TRACEPARENT, traceparent), r.text(Attribute.TRACESTATE, tracestate));
    if (key == null || key.isEmpty()) {
      key = r.transportKey();
    }
    try {
      return new Message(
          r.id,
          binding.topic(source),
          typeText,
          r.schemaVersion,
          Optional.ofNullable(key),
          occurredAt,
          sourceText,
          Optional.ofNullable(correlation),
          Optional.ofNullable(causation),
          Optional.ofNullable(tenantText),
          app,
          new Payload(binding.payload(source), content != null ? content : Payload.OCTET_STREAM));
    } catch (IllegalArgumentException e) {
      throw r.fail("not a valid message: " + e.getMessage(), e);
    }
  }

  /**
   * The distributed-tracing extension's context stands for the plain W3C headers only when they are
   * absent (a message from another CloudEvents producer): the same context.
   */
  private static void traceContext(Map<String, String> app, String parent, String state) {
    if (parent != null && !app.containsKey(TraceHeaders.TRACEPARENT)) {
      app.put(TraceHeaders.TRACEPARENT, parent);
      if (state != null) {
        app.put(TraceHeaders.TRACESTATE, state);
      }
    }
  }

  /** The value of header {@code h}; a value that cannot be text is a failure naming the header. */
  private static <S, H> Object value(
      CloudEventsBinding<S, H> binding, S source, H h, String name, Attribute a) {
    try {
      return binding.value(h);
    } catch (IllegalArgumentException e) {
      String label = a == null ? name : binding.headerName(a);
      throw new Read<>(binding, source, null).fail("header " + label + ": " + e.getMessage(), e);
    }
  }

  /** An application header's value as text. */
  private static <S> String text(
      CloudEventsBinding<S, ?> binding, S source, String name, Object v) {
    if (v instanceof String s) {
      return s;
    }
    try {
      return HeaderText.utf8((byte[]) v);
    } catch (IllegalArgumentException e) {
      // the label only on failure: this runs for every header of every message
      throw new Read<>(binding, source, null).fail("header " + name + ": " + e.getMessage(), e);
    }
  }

  /** {@code s.toLowerCase(Locale.ROOT).startsWith(prefix)} for a lower-case ASCII prefix. */
  private static boolean startsWithIgnoreCase(String s, String prefix) {
    return s.regionMatches(true, 0, prefix, 0, prefix.length());
  }

  /**
   * The reading of one message after its headers were collected: what was read so far, for the
   * failure that names it.
   */
  private static final class Read<S> {
    private final CloudEventsBinding<S, ?> binding;
    private final S source;
    private final Object rawType; // read for a failure even before its turn, when it can be
    private UUID id;
    private int schemaVersion;

    Read(CloudEventsBinding<S, ?> binding, S source, Object rawType) {
      this.binding = binding;
      this.source = source;
      this.rawType = rawType;
    }

    /** The content type as text, or null; a structured mode message is refused. */
    String contentType(Object raw) {
      String text = text(Attribute.DATACONTENTTYPE, raw);
      if (text != null && startsWithIgnoreCase(text, "application/cloudevents")) {
        throw fail(
            "structured content mode (content-type "
                + quote(text)
                + ") is not supported; expected binary mode",
            null);
      }
      return text;
    }

    void specVersion(Object raw) {
      String text =
          raw instanceof byte[] b && Arrays.equals(b, SPEC_VERSION_BYTES)
              ? SPEC_VERSION
              : text(Attribute.SPECVERSION, raw);
      if (text == null) {
        throw fail(
            "missing header "
                + binding.headerName(Attribute.SPECVERSION)
                + " (not a CloudEvents binary "
                + binding.unit()
                + ")",
            null);
      }
      if (!text.equals(SPEC_VERSION)) {
        throw fail(
            "unsupported CloudEvents spec version " + quote(text) + ", expected " + SPEC_VERSION,
            null);
      }
    }

    void id(Object raw) {
      UUID fast = raw instanceof byte[] b ? HeaderText.canonicalUuid(b) : null;
      id =
          fast != null
              ? fast
              : parse(
                  Attribute.ID,
                  required(Attribute.ID, text(Attribute.ID, raw)),
                  HeaderText::parseUuid);
    }

    void schemaVersion(Object raw) {
      String text = text(Attribute.SCHEMAVERSION, raw);
      schemaVersion =
          text == null ? 1 : parse(Attribute.SCHEMAVERSION, text, HeaderText::parsePositiveInt);
    }

    Instant time(Object raw) {
      Instant fast = raw instanceof byte[] b ? HeaderText.utcTime(b) : null;
      if (fast != null) {
        return fast;
      }
      String text = text(Attribute.TIME, raw);
      if (text != null) {
        return parse(Attribute.TIME, text, HeaderText::parseTime);
      }
      Optional<Instant> timestamp = binding.timestamp(source);
      if (timestamp.isEmpty()) {
        throw fail(
            "missing header "
                + binding.headerName(Attribute.TIME)
                + " and the "
                + binding.unit()
                + " has no timestamp",
            null);
      }
      return timestamp.get();
    }

    /** The transport's own key, or null when it has none or an empty one. */
    String transportKey() {
      byte[] k = binding.key(source).orElse(null);
      if (k == null || k.length == 0) {
        return null;
      }
      try {
        return HeaderText.utf8(k);
      } catch (IllegalArgumentException e) {
        throw fail(binding.unit() + " key: " + e.getMessage(), e);
      }
    }

    /** The attribute's value as text, or null when absent. */
    String text(Attribute a, Object raw) {
      if (raw == null || raw instanceof String) {
        return (String) raw;
      }
      try {
        return HeaderText.utf8((byte[]) raw);
      } catch (IllegalArgumentException e) {
        throw fail("header " + binding.headerName(a) + ": " + e.getMessage(), e);
      }
    }

    String required(Attribute a, String v) {
      if (v == null) {
        throw fail("missing header " + binding.headerName(a), null);
      }
      return v;
    }

    <R> R parse(Attribute a, String input, Function<String, R> parser) {
      try {
        return parser.apply(input);
      } catch (IllegalArgumentException e) {
        throw fail(binding.headerName(a) + ": " + e.getMessage(), e);
      }
    }

    DecodingException fail(String reason, Throwable cause) {
      DecodingException.Builder b =
          DecodingException.builder(
                  "cannot read " + binding.describe(source) + ": " + reason,
                  binding.payload(source))
              .cause(cause);
      if (id != null) {
        b.messageId(id);
      }
      String type = readableType();
      if (type != null) {
        b.type(type);
      }
      if (schemaVersion > 0) {
        b.schemaVersion(schemaVersion);
      }
      return b.build();
    }

    /** The type for a failure, when it was received as valid text; else null. */
    private String readableType() {
      if (rawType instanceof String s) {
        return s;
      }
      if (rawType instanceof byte[] b) {
        try {
          return HeaderText.utf8(b);
        } catch (IllegalArgumentException e) {
          return null; // its own failure says so, when its turn comes
        }
      }
      return null;
    }
  }
}
