package dev.postbox.core;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.UUID;

/**
 * Bytes that cannot be turned into a message or an event: malformed envelope headers, a payload
 * that is not valid JSON, a wrong content type, a schema version newer than this service knows or
 * with no upcaster path to the current one.
 *
 * <p>Permanent: retrying the same bytes gives the same failure, so it extends {@link
 * PermanentMessageException}. It carries what a dead-letter handler needs: a copy of the raw bytes
 * exactly as received (the record value or the payload), and the message id, type and schema
 * version when they could be read before decoding failed (empty otherwise). The raw bytes are not
 * part of {@link #getMessage()}: they may be large or hold personal data.
 *
 * <p>Create one with {@link #builder(String, byte[])} or {@link #forMessage(Message, String,
 * Throwable)}. Effectively immutable once built; {@link #rawBytes()} returns a copy.
 */
public class DecodingException extends PermanentMessageException {

  private final byte[] rawBytes;
  private final UUID messageId;
  private final String type;
  private final int schemaVersion;
  private final String reason;

  /** Creates the exception from a builder; use {@link #builder(String, byte[])}. */
  protected DecodingException(Builder b) {
    super(describe(b), b.cause);
    this.rawBytes = b.rawBytes;
    this.messageId = b.messageId;
    this.type = b.type;
    this.schemaVersion = b.schemaVersion;
    this.reason = b.reason;
  }

  /**
   * A builder for a decoding failure of {@code rawBytes} (copied; an empty array if nothing was
   * received) because of {@code reason}.
   */
  public static Builder builder(String reason, byte[] rawBytes) {
    return new Builder(reason, rawBytes);
  }

  /**
   * A decoding failure of the payload of {@code message}: carries its id, type, schema version and
   * payload bytes.
   */
  public static DecodingException forMessage(Message message, String reason, Throwable cause) {
    return builder(reason, message.payload().unsafeBytes())
        .messageId(message.id())
        .type(message.type())
        .schemaVersion(message.schemaVersion())
        .cause(cause)
        .build();
  }

  /** A copy of the bytes that could not be decoded, exactly as received. */
  public byte[] rawBytes() {
    return rawBytes.clone();
  }

  /** Why decoding failed, without the context that {@link #getMessage()} adds. */
  public String reason() {
    return reason;
  }

  /** The message id, if it was read before decoding failed. */
  public Optional<UUID> messageId() {
    return Optional.ofNullable(messageId);
  }

  /** The event type, if it was read before decoding failed. */
  public Optional<String> type() {
    return Optional.ofNullable(type);
  }

  /** The schema version, if it was read before decoding failed. */
  public OptionalInt schemaVersion() {
    return schemaVersion > 0 ? OptionalInt.of(schemaVersion) : OptionalInt.empty();
  }

  private static String describe(Builder b) {
    StringBuilder s = new StringBuilder(b.reason);
    s.append(" [");
    if (b.messageId != null) {
      s.append("id=").append(b.messageId).append(", ");
    }
    if (b.type != null) {
      s.append("type=").append(b.type).append(", ");
    }
    if (b.schemaVersion > 0) {
      s.append("schemaVersion=").append(b.schemaVersion).append(", ");
    }
    s.append(b.rawBytes.length).append(" raw bytes]");
    return s.toString();
  }

  /**
   * Builds a {@link DecodingException}. Everything except the reason and the raw bytes is optional.
   * Not thread-safe.
   */
  public static final class Builder {
    private final String reason;
    private final byte[] rawBytes;
    private UUID messageId;
    private String type;
    private int schemaVersion;
    private Throwable cause;

    private Builder(String reason, byte[] rawBytes) {
      this.reason = Objects.requireNonNull(reason, "reason");
      this.rawBytes = Objects.requireNonNull(rawBytes, "rawBytes").clone();
    }

    /** Sets the id of the message being decoded. */
    public Builder messageId(UUID messageId) {
      this.messageId = Objects.requireNonNull(messageId, "messageId");
      return this;
    }

    /** Sets the event type of the message being decoded. */
    public Builder type(String type) {
      this.type = Objects.requireNonNull(type, "type");
      return this;
    }

    /** Sets the schema version of the message being decoded (must be at least 1). */
    public Builder schemaVersion(int schemaVersion) {
      if (schemaVersion < 1) {
        throw new IllegalArgumentException("schemaVersion must be >= 1, was " + schemaVersion);
      }
      this.schemaVersion = schemaVersion;
      return this;
    }

    /** Sets the underlying cause. */
    public Builder cause(Throwable cause) {
      this.cause = cause;
      return this;
    }

    /** Builds the exception (to be thrown by the caller). */
    public DecodingException build() {
      return new DecodingException(this);
    }
  }
}
