package dev.postbox.core.spi;

import java.time.Instant;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * How one transport's protocol binding of CloudEvents (binary content mode) carries a message:
 * where its headers are, which header holds which attribute, what the transport itself adds (a key,
 * a timestamp), and how its messages are named in a failure. A transport adapter implements it
 * once, as a stateless constant, and reads every message it receives with {@link
 * CloudEventsReader#read(CloudEventsBinding, Object)}: the validation and mapping are the reader's,
 * the same for every transport.
 *
 * <p>Called for every received message: implementations must not allocate beyond what their
 * transport's types force (no wrapping of headers, no copying of values).
 *
 * @param <S> the received message (with whatever the transport adds to it)
 * @param <H> one header of it
 */
public interface CloudEventsBinding<S, H> {

  /** The CloudEvents attributes the reader maps into a message. */
  enum Attribute {
    /** {@code specversion}, required, {@value CloudEventsReader#SPEC_VERSION}. */
    SPECVERSION,
    /** {@code id}, required, a UUID: the message id. */
    ID,
    /** {@code source}, required, a URI reference. */
    SOURCE,
    /** {@code type}, required, not blank. */
    TYPE,
    /** {@code time}, RFC 3339; if absent, the transport's timestamp. */
    TIME,
    /** Extension {@code schemaversion}: a positive decimal; absent = 1. */
    SCHEMAVERSION,
    /** Extension {@code partitionkey}: the ordering key; if absent or empty, the transport's. */
    PARTITIONKEY,
    /** Extension {@code correlationid}. */
    CORRELATIONID,
    /** Extension {@code causationid}. */
    CAUSATIONID,
    /** Extension {@code tenant}. */
    TENANT,
    /** Distributed-tracing extension {@code traceparent}. */
    TRACEPARENT,
    /** Distributed-tracing extension {@code tracestate}. */
    TRACESTATE,
    /**
     * {@code datacontenttype}: the payload's content type; bindings carry it in a header or a
     * property of their own, so {@link #prefixed} leaves it out.
     */
    DATACONTENTTYPE;

    private final String attributeName = name().toLowerCase(Locale.ROOT);

    /** The CloudEvents name of the attribute ({@code specversion}, {@code id}, ...). */
    public String attributeName() {
      return attributeName;
    }

    /**
     * Every attribute but {@link #DATACONTENTTYPE} by its header name under each of {@code
     * prefixes} (a binding's {@code ce_}, {@code cloudEvents_}, ...): the usual {@link
     * #attributes()} of a binding, to which it adds its content type header if it has one.
     */
    public static Map<String, Attribute> prefixed(String... prefixes) {
      Map<String, Attribute> out = new HashMap<>();
      for (String prefix : prefixes) {
        for (Attribute a : values()) {
          if (a != DATACONTENTTYPE) {
            out.put(prefix + a.attributeName(), a);
          }
        }
      }
      return out;
    }
  }

  /**
   * How failures name the transport's messages: {@code record}, {@code message} (in "not a
   * CloudEvents binary record", "the record has no timestamp", "record key").
   */
  String unit();

  /**
   * The message and where it was read, for a failure: {@code cannot read } and this start each
   * failure's reason. Called on failures only.
   */
  String describe(S source);

  /** The header name of {@code attribute} as failures name it (its canonical name). */
  String headerName(Attribute attribute);

  /**
   * The header names that carry CloudEvents attributes (exact names), usually from {@link
   * Attribute#prefixed}; a constant.
   */
  Map<String, Attribute> attributes();

  /**
   * Whether a header that is not an attribute is still not an application header ({@code ce_*},
   * {@code pb_*}, ... in any case): the message's headers leave it out.
   */
  boolean reserved(String name);

  /** The headers of {@code source}, in the order received (empty when it has none). */
  Iterable<H> headers(S source);

  /** The name of {@code header} (a header without a name, if the transport allows one: null). */
  String name(H header);

  /**
   * The value of {@code header}: its raw UTF-8 bytes as received (not copied; the reader validates
   * them), or text; <b>null</b> when the header has no value or none that is text (a nested table),
   * read as if the header were absent. Throws {@link IllegalArgumentException} when a value cannot
   * be turned into text (the reader reports it, naming the header).
   */
  Object value(H header);

  /**
   * The payload's content type when the transport carries it outside the headers (a property);
   * empty when it is a header (named in {@link #attributes()} as {@link
   * Attribute#DATACONTENTTYPE}).
   */
  Optional<String> contentType(S source);

  /** The topic {@code source} was read from. */
  String topic(S source);

  /** The payload bytes as received (not copied); empty, never null, when there are none. */
  byte[] payload(S source);

  /**
   * The transport's own key of {@code source} as UTF-8 bytes, used when the {@code partitionkey}
   * attribute is absent or empty; empty when the transport has none. Called only then.
   */
  Optional<byte[]> key(S source);

  /**
   * The transport's own timestamp of {@code source}, used when the {@code time} attribute is
   * absent; empty when it has none. Called only then.
   */
  Optional<Instant> timestamp(S source);
}
