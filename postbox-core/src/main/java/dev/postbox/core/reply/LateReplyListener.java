package dev.postbox.core.reply;

/**
 * Receives a reply that arrived after its request timed out (counted as a late reply), once per
 * request: to record the outcome the caller no longer waits for, say. Never called for a reply of a
 * request still in flight, which goes to its caller. Called on the requester's reply thread; a
 * throw is logged and ignored. Must be thread-safe.
 */
@FunctionalInterface
public interface LateReplyListener {

  /** Ignores late replies (they are still counted). */
  static LateReplyListener ignore() {
    return reply -> {};
  }

  void lateReply(Reply reply) throws Exception;
}
