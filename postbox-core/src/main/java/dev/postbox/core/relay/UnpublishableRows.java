package dev.postbox.core.relay;

/**
 * What the relay does with an outbox row it cannot publish: one the broker can never take (larger
 * than its maximum message size, an invalid topic name), one the store cannot even read into a
 * message, or one whose topic the broker does not have or refuses (for a long while, until someone
 * creates the topic or grants access).
 *
 * <p>In every case the row is marked failed with the reason ({@code failed_at}, {@code
 * last_error}), logged once at WARN and counted ({@code postbox.relay.unpublishable}); the choice
 * is what happens to the rows behind it.
 */
public enum UnpublishableRows {
  /**
   * The default: the row holds the later rows of its key (on any topic) and, when the failure is
   * its topic's (missing, refused, invalid name), every row of that topic, until an operator
   * retries it (it is published first, then the rest in order) or skips it with a reason. Other
   * keys and topics flow on. Per-key order is never broken.
   */
  BLOCK_KEY,
  /**
   * The row is skipped and the later rows of its key go on without it (the behaviour before holding
   * existed). A row the broker cannot take for good is left behind for good; republishing it
   * afterwards puts it after later rows of its key. A topic the broker does not have or refuses
   * still holds that topic's rows (skipping would skip every row of the topic).
   */
  SKIP
}
