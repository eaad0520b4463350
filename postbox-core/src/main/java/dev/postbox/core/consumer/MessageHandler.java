package dev.postbox.core.consumer;

import dev.postbox.core.Payload;
import java.util.Optional;

/**
 * Applies one message. May throw anything: the subscription's {@link FailureHandler} decides
 * whether to retry or to give up. Called concurrently for different keys (see {@link Ordering});
 * must be thread-safe.
 */
@FunctionalInterface
public interface MessageHandler {
  void handle(Delivery delivery) throws Exception;

  /**
   * Called after the effect ({@code EFFECTIVELY_ONCE} only): once the handler's transaction
   * committed, with the result it {@linkplain Delivery#recordResult recorded} ({@code duplicate}
   * false), and for every later delivery of the same message id that the inbox suppressed, with the
   * result stored by the first ({@code duplicate} true; {@link #handle} is not called). On the
   * worker thread, outside the transaction ({@link Delivery#connection()} is empty). For work that
   * must follow the commit, such as sending a reply: a reply lost by a crash before it is sent
   * comes back with the redelivery, as a duplicate with the stored result.
   *
   * <p>A throw fails the attempt like a throw of {@link #handle}: the failure handler decides, and
   * a retry finds the id applied and calls this again with {@code duplicate} true. The default does
   * nothing.
   */
  default void completed(Delivery delivery, Optional<Payload> result, boolean duplicate)
      throws Exception {}
}
