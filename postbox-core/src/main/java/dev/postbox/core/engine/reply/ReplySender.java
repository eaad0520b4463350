package dev.postbox.core.engine.reply;

import dev.postbox.core.Message;

/** What a transport gives a {@link ResponderHandler}: sending a reply to a reply address. */
public interface ReplySender {

  /**
   * The topic a reply to {@code replyTo} carries in its envelope.
   *
   * @throws dev.postbox.core.reply.InvalidRequestException if {@code replyTo} is not an address of
   *     this transport
   */
  String topicOf(String replyTo);

  /**
   * Sends {@code reply} to {@code replyTo} and returns once the broker accepted it; throws when it
   * did not (the responder's attempt fails and is retried as a duplicate with the stored reply).
   */
  void send(String replyTo, Message reply) throws Exception;
}
