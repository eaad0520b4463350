package dev.postbox.core.reply;

/**
 * The header a request carries besides its correlation id (which is its message id): where its
 * reply goes. Its value is the requester transport's address (a Kafka reply topic and partition
 * {@code topic:partition}, a RabbitMQ queue name) and is opaque to everything else.
 */
public final class RequestReplyHeaders {

  /** Header naming the reply address. */
  public static final String REPLY_TO = "reply-to";

  private RequestReplyHeaders() {}
}
