package dev.postbox.core.codec;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.Module;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import dev.postbox.core.DecodingException;
import dev.postbox.core.Payload;
import java.io.IOException;
import java.util.Locale;
import java.util.Objects;

/**
 * Encodes Java objects (records included) to JSON {@link Payload}s and decodes them back, with
 * Jackson.
 *
 * <p>{@link #create()} uses a mapper with these settings: unknown JSON properties are ignored (a
 * newer producer may add fields), trailing tokens after the JSON value are an error (garbage must
 * not decode), {@code java.time} types are supported and written as ISO-8601 strings (for example
 * {@code "2024-05-01T10:15:30Z"}, offsets kept as written), not as numbers, and {@link
 * java.util.Optional} fields are supported (an empty one is written as {@code null}; a missing or
 * {@code null} field reads as empty).
 *
 * <p>{@link #using(ObjectMapper)} takes your own mapper and works on a {@linkplain
 * ObjectMapper#copy() copy} of it, so later changes to yours do not leak in. On the copy it turns
 * {@link DeserializationFeature#FAIL_ON_UNKNOWN_PROPERTIES} off and {@link
 * DeserializationFeature#FAIL_ON_TRAILING_TOKENS} on, because tolerant reading of fields and strict
 * rejection of garbage are part of the schema-evolution contract, and registers {@link
 * JavaTimeModule} and {@link Jdk8Module} unless modules with the same ids are already registered;
 * every other setting (date format, naming strategy, your modules) is kept as you configured it.
 *
 * <p>Decoding failures throw {@link DecodingException}; see the methods. Encoding failures throw
 * {@link EncodingException}.
 *
 * <p>Immutable and thread-safe.
 */
public final class JsonCodec {

  private final ObjectMapper mapper;

  private JsonCodec(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  /** A codec with the default mapper described in the class documentation. */
  public static JsonCodec create() {
    return new JsonCodec(defaultMapper());
  }

  /**
   * A codec using a copy of {@code mapper}, adjusted as described in the class documentation. The
   * argument itself is not modified.
   */
  public static JsonCodec using(ObjectMapper mapper) {
    Objects.requireNonNull(mapper, "mapper");
    ObjectMapper copy = mapper.copy();
    copy.disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
    copy.enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    for (Module module : new Module[] {new JavaTimeModule(), new Jdk8Module()}) {
      if (!copy.getRegisteredModuleIds().contains(module.getTypeId())) {
        copy.registerModule(module);
      }
    }
    return new JsonCodec(copy);
  }

  /**
   * A new mapper with the default settings of {@link #create()}, for callers who want to start from
   * them and adjust (then pass it to {@link #using(ObjectMapper)}).
   */
  public static ObjectMapper defaultMapper() {
    return JsonMapper.builder()
        .addModule(new JavaTimeModule())
        .addModule(new Jdk8Module())
        .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
        .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
        .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
        .disable(DeserializationFeature.ADJUST_DATES_TO_CONTEXT_TIME_ZONE)
        .build();
  }

  /**
   * Encodes {@code value} as a JSON payload (content type {@value Payload#JSON}, UTF-8).
   *
   * @throws EncodingException if Jackson cannot serialize the value
   */
  public Payload encode(Object value) {
    Objects.requireNonNull(value, "value");
    try {
      return new Payload(mapper.writeValueAsBytes(value), Payload.JSON);
    } catch (JsonProcessingException e) {
      throw new EncodingException(
          "cannot encode " + value.getClass().getName() + " as JSON: " + e.getOriginalMessage(), e);
    }
  }

  /**
   * Decodes a JSON payload into {@code type}. The payload's content type must be JSON ({@value
   * Payload#JSON} or any {@code +json} media type, parameters ignored, charset UTF-8 if given).
   *
   * @throws DecodingException if the content type is not JSON, the bytes are not valid JSON, do not
   *     fit {@code type}, or are the JSON literal {@code null}
   */
  public <T> T decode(Payload payload, Class<T> type) {
    requireJson(payload);
    return decode(payload.unsafeBytes(), type);
  }

  /**
   * Decodes JSON bytes into {@code type}, without looking at any content type.
   *
   * @throws DecodingException if the bytes are not valid JSON, do not fit {@code type}, or are the
   *     JSON literal {@code null}
   */
  public <T> T decode(byte[] json, Class<T> type) {
    Objects.requireNonNull(json, "json");
    Objects.requireNonNull(type, "type");
    T value;
    try {
      value = mapper.readValue(json, type);
    } catch (IOException | RuntimeException e) {
      throw failure("cannot decode JSON as " + type.getName() + ": " + detail(e), json, e);
    }
    if (value == null) {
      throw failure("JSON is null, expected " + type.getName(), json, null);
    }
    return value;
  }

  /**
   * Parses JSON bytes into a tree.
   *
   * @throws DecodingException if the bytes are empty or not valid JSON
   */
  public JsonNode readTree(byte[] json) {
    Objects.requireNonNull(json, "json");
    JsonNode tree;
    try {
      tree = mapper.readTree(json);
    } catch (IOException | RuntimeException e) {
      throw failure("cannot parse JSON: " + detail(e), json, e);
    }
    if (tree == null || tree.isMissingNode()) {
      throw failure("no JSON content", json, null);
    }
    return tree;
  }

  /**
   * Converts a JSON tree into {@code type}. {@code rawBytes} are only used to fill the exception.
   *
   * @throws DecodingException if the tree does not fit {@code type} or is JSON {@code null}
   */
  public <T> T treeToValue(JsonNode tree, Class<T> type, byte[] rawBytes) {
    Objects.requireNonNull(tree, "tree");
    Objects.requireNonNull(type, "type");
    T value;
    try {
      value = mapper.treeToValue(tree, type);
    } catch (IOException | RuntimeException e) {
      throw failure("cannot decode JSON as " + type.getName() + ": " + detail(e), rawBytes, e);
    }
    if (value == null) {
      throw failure("JSON is null, expected " + type.getName(), rawBytes, null);
    }
    return value;
  }

  /**
   * Whether {@code contentType} is a JSON media type: {@value Payload#JSON} or {@code
   * <type>/<subtype>+json}, case-insensitive, with optional parameters; a {@code charset} parameter
   * must be UTF-8.
   */
  public static boolean isJson(String contentType) {
    Objects.requireNonNull(contentType, "contentType");
    // limit -1 keeps empty parts: ";;;" splits into four empty parts, not none (found by fuzzing)
    String[] parts = contentType.split(";", -1);
    String media = parts[0].trim().toLowerCase(Locale.ROOT);
    boolean json = media.equals(Payload.JSON) || (media.contains("/") && media.endsWith("+json"));
    if (!json) {
      return false;
    }
    for (int i = 1; i < parts.length; i++) {
      String p = parts[i].trim().toLowerCase(Locale.ROOT);
      if (p.startsWith("charset=")) {
        String cs = p.substring("charset=".length()).replace("\"", "").trim();
        if (!cs.equals("utf-8") && !cs.equals("utf8")) {
          return false;
        }
      }
    }
    return true;
  }

  private static void requireJson(Payload payload) {
    Objects.requireNonNull(payload, "payload");
    if (!isJson(payload.contentType())) {
      throw failure(
          "content type (" + HeaderText.quote(payload.contentType()) + ") is not JSON",
          payload.unsafeBytes(),
          null);
    }
  }

  /**
   * What went wrong, without the payload: Jackson's messages quote the offending token or value
   * ({@code Unrecognized token 'secret'}, {@code from String "secret"}) and a constructor's
   * exception message may hold field values, so only the exception class, the location and the JSON
   * path (field names: the schema, not the data) are kept. Error messages reach logs; the payload
   * is for the dead letter only.
   */
  static String detail(Exception e) {
    StringBuilder b = new StringBuilder(e.getClass().getSimpleName());
    if (e instanceof JsonProcessingException j) {
      JsonLocation at = j.getLocation();
      if (at != null && at.getLineNr() > 0) {
        b.append(" at line ").append(at.getLineNr()).append(", column ").append(at.getColumnNr());
      }
      if (j instanceof JsonMappingException m && !m.getPath().isEmpty()) {
        b.append(", path ");
        for (JsonMappingException.Reference r : m.getPath()) {
          b.append(r.getFieldName() != null ? "." + r.getFieldName() : "[" + r.getIndex() + "]");
        }
      }
    }
    return b.toString();
  }

  /**
   * The failure, with the codec's exception as its cause only in redacted form (its class, the
   * location and its stack trace; not its message), since causes are logged with their messages.
   */
  private static DecodingException failure(String reason, byte[] raw, Throwable cause) {
    Throwable redacted = cause == null ? null : new RedactedCause(cause);
    return DecodingException.builder(reason, raw).cause(redacted).build();
  }

  /** A stand-in for a codec exception whose message may quote the payload. Never thrown. */
  static final class RedactedCause extends dev.postbox.core.PostboxException {
    RedactedCause(Throwable original) {
      super(
          original.getClass().getName()
              + " (message withheld: it may quote the payload)"
              + (original instanceof Exception e ? ": " + detail(e) : ""));
      setStackTrace(original.getStackTrace());
    }
  }
}
