package dev.postbox.jdbc.internal;

/**
 * The one SQL condition for a pending outbox row (neither published nor failed): what the relay
 * claims, what the backlog and the probes count, and what the partial index of migration V1 covers.
 */
public final class PendingRows {

  /** The condition on {@code postbox_outbox} without a table alias. */
  public static final String CONDITION = "published_at IS NULL AND failed_at IS NULL";

  private PendingRows() {}

  /** The condition on the outbox table aliased {@code alias} (for example {@code "o"}). */
  public static String condition(String alias) {
    return alias + ".published_at IS NULL AND " + alias + ".failed_at IS NULL";
  }
}
