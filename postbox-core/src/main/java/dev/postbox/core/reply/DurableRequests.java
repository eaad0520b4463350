package dev.postbox.core.reply;

import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.engine.reply.RequesterEngine;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * Durable requests: the request goes through the outbox in the caller's transaction, and its reply
 * is consumed by an ordinary {@code EFFECTIVELY_ONCE} subscription on the reply address, so a
 * requester that crashes between the request and the reply loses nothing: the request is published
 * once its transaction committed, and the reply is processed, once, whenever it comes back, by
 * whichever instance of the requesting service reads it. There is no timeout and no waiting caller;
 * what the service needs to remember about the request, it stores with its own data in the same
 * transaction.
 *
 * <pre>{@code
 * DurableRequests payments = KafkaRequester.durableRequests("payments.replies");
 * outbox.inTransaction(ds, tx -> {
 *   insertOrder(tx.connection(), order);                       // the business change
 *   tx.write(payments.request(authoriseMessage(order)));        // the request, in the same commit
 *   return null;
 * });
 * Subscription replies = Subscription.builder("orders-payment-replies")
 *     .topics("payments.replies").guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE).build();
 * KafkaSubscriber.builder(bootstrap, replies).inbox(inbox)
 *     .handler(payments.replyHandler((reply, d) -> markAuthorised(d.connection().orElseThrow(), reply)))
 *     .build().start();
 * }</pre>
 *
 * <p>The request carries the reply address in its {@link RequestReplyHeaders#REPLY_TO} header and
 * its id as correlation id, like a {@link Requester}'s, so the same responders answer both. Use one
 * reply address (subscription) per requesting service, not per instance. The transports' factories:
 * {@code KafkaRequester.durableRequests(replyTopic[, partition])} (reply-to {@code
 * topic:partition}) and {@code RabbitRequester.durableRequests(replyTopic)} (reply-to {@code
 * /exchanges/<replyTopic>}, the replies routed to the reply subscription's shard queues by key).
 * Immutable, thread-safe.
 */
public final class DurableRequests {

  private final String replyAddress;

  private DurableRequests(String replyAddress) {
    this.replyAddress = Objects.requireNonNull(replyAddress, "replyAddress");
    if (replyAddress.isBlank()) {
      throw new IllegalArgumentException("replyAddress must not be blank");
    }
  }

  /**
   * Requests answered at {@code replyAddress}, a transport's address (see {@code
   * KafkaRequester.durableRequests}, {@code RabbitRequester.durableRequests}).
   */
  public static DurableRequests replyingTo(String replyAddress) {
    return new DurableRequests(replyAddress);
  }

  /** The reply address requests carry. */
  public String replyAddress() {
    return replyAddress;
  }

  /**
   * {@code request} as a durable request, to be written to the outbox: its correlation id is its
   * id, its {@code reply-to} header the reply address, with the current trace context.
   *
   * @throws IllegalArgumentException if its correlation id is set and is not its id
   */
  public Message request(Message request) {
    return RequesterEngine.stamp(request, replyAddress);
  }

  /**
   * The handler of the {@code EFFECTIVELY_ONCE} subscription on the reply address: hands each reply
   * to {@code handler} as a {@link Reply} of the request its correlation id names. A message
   * without a usable correlation id is not a reply: dead-lettered with that reason.
   */
  public MessageHandler replyHandler(DurableReplyHandler handler) {
    Objects.requireNonNull(handler, "handler");
    return delivery -> {
      Message reply = delivery.message();
      Optional<UUID> id = reply.correlationId().flatMap(DurableRequests::uuid);
      if (id.isEmpty()) {
        throw new PermanentMessageException(
            "message "
                + reply.id()
                + " ("
                + reply.type()
                + ") at reply address "
                + replyAddress
                + " has no request id as correlation id: not a reply");
      }
      handler.handle(new Reply(id.get(), reply), delivery);
    };
  }

  private static Optional<UUID> uuid(String text) {
    try {
      return Optional.of(UUID.fromString(text));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }
}
