package dev.postbox.admin;

import dev.postbox.core.spi.DeadLetterStore.Status;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * Which dead letters a list, a group list or a bulk action covers; empty fields match everything.
 * Build with {@link #builder()}; {@link #all()} matches every letter.
 *
 * @param consumer the subscription that gave up
 * @param topic origin topic
 * @param type message type
 * @param key record key as UTF-8 text
 * @param tenant tenant (from the record's CloudEvents tenant header)
 * @param errorClass exception class name
 * @param fingerprint failure group
 * @param status PENDING, REPLAYED or DISCARDED
 * @param from first failure at or after
 * @param to first failure before
 * @param messageId the failed message's id (its letters for every consumer)
 */
public record DeadLetterFilter(
    Optional<String> consumer,
    Optional<String> topic,
    Optional<String> type,
    Optional<String> key,
    Optional<String> tenant,
    Optional<String> errorClass,
    Optional<String> fingerprint,
    Optional<Status> status,
    Optional<Instant> from,
    Optional<Instant> to,
    Optional<UUID> messageId) {

  public DeadLetterFilter {
    Objects.requireNonNull(consumer, "consumer");
    Objects.requireNonNull(topic, "topic");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(tenant, "tenant");
    Objects.requireNonNull(errorClass, "errorClass");
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(status, "status");
    Objects.requireNonNull(from, "from");
    Objects.requireNonNull(to, "to");
    Objects.requireNonNull(messageId, "messageId");
    if (from.isPresent() && to.isPresent() && !from.get().isBefore(to.get())) {
      throw new IllegalArgumentException("from must be before to: " + from.get() + ", " + to.get());
    }
  }

  /** Every letter. */
  public static DeadLetterFilter all() {
    return builder().build();
  }

  /** A builder with nothing set (matches everything). */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder starting from this filter. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.consumer = consumer;
    b.topic = topic;
    b.type = type;
    b.key = key;
    b.tenant = tenant;
    b.errorClass = errorClass;
    b.fingerprint = fingerprint;
    b.status = status;
    b.from = from;
    b.to = to;
    b.messageId = messageId;
    return b;
  }

  /** Builds a {@link DeadLetterFilter}; null or blank text clears a field. Not thread-safe. */
  public static final class Builder {
    private Optional<String> consumer = Optional.empty();
    private Optional<String> topic = Optional.empty();
    private Optional<String> type = Optional.empty();
    private Optional<String> key = Optional.empty();
    private Optional<String> tenant = Optional.empty();
    private Optional<String> errorClass = Optional.empty();
    private Optional<String> fingerprint = Optional.empty();
    private Optional<Status> status = Optional.empty();
    private Optional<Instant> from = Optional.empty();
    private Optional<Instant> to = Optional.empty();
    private Optional<UUID> messageId = Optional.empty();

    private Builder() {}

    private static Optional<String> text(String v) {
      return v == null || v.isBlank() ? Optional.empty() : Optional.of(v);
    }

    public Builder consumer(String v) {
      consumer = text(v);
      return this;
    }

    public Builder topic(String v) {
      topic = text(v);
      return this;
    }

    public Builder type(String v) {
      type = text(v);
      return this;
    }

    public Builder key(String v) {
      key = text(v);
      return this;
    }

    public Builder tenant(String v) {
      tenant = text(v);
      return this;
    }

    public Builder errorClass(String v) {
      errorClass = text(v);
      return this;
    }

    public Builder fingerprint(String v) {
      fingerprint = text(v);
      return this;
    }

    public Builder status(Status v) {
      status = Optional.ofNullable(v);
      return this;
    }

    public Builder from(Instant v) {
      from = Optional.ofNullable(v);
      return this;
    }

    public Builder to(Instant v) {
      to = Optional.ofNullable(v);
      return this;
    }

    public Builder messageId(UUID v) {
      messageId = Optional.ofNullable(v);
      return this;
    }

    /**
     * The filter.
     *
     * @throws IllegalArgumentException if from is not before to
     */
    public DeadLetterFilter build() {
      return new DeadLetterFilter(
          consumer, topic, type, key, tenant, errorClass, fingerprint, status, from, to, messageId);
    }
  }
}
