package dev.postbox.rabbitmq;

import dev.postbox.core.reply.InvalidRequestException;
import java.util.regex.Pattern;

/**
 * Where a request's {@code reply-to} sends its reply on RabbitMQ: a {@link Queue} (a {@link
 * RabbitRequester}'s own reply queue, written as its name) or a {@link Topic} (the reply topic of
 * durable requests, written {@code /exchanges/<topic>}, RabbitMQ's address notation; a name cannot
 * contain {@code /}, so neither form can be read as the other, and a Kafka address {@code
 * topic:partition} is neither).
 */
sealed interface ReplyAddress {

  /** The prefix of a topic's address. */
  String EXCHANGES = "/exchanges/";

  /** A queue or topic name: 1-249 of {@code [a-zA-Z0-9._-]} (the topic names Postbox accepts). */
  Pattern NAME = Pattern.compile("[a-zA-Z0-9._-]{1,249}");

  /** The topic a reply to this address carries in its envelope. */
  String topic();

  /**
   * A reply queue, answered through the default exchange with the queue's name as routing key.
   *
   * @param name the queue's name
   */
  record Queue(String name) implements ReplyAddress {
    @Override
    public String topic() {
      return name;
    }
  }

  /**
   * A reply topic, answered through the topic's exchange with the reply's slot as routing key, as
   * the relay publishes: the replies reach the shard queues of every subscription of the topic.
   *
   * @param topic the reply topic
   */
  record Topic(String topic) implements ReplyAddress {
    @Override
    public String toString() {
      return EXCHANGES + topic;
    }
  }

  /**
   * The address in a {@code reply-to} header.
   *
   * @throws InvalidRequestException if it is neither a queue name nor {@code /exchanges/<topic>}
   */
  static ReplyAddress parse(String replyTo) {
    if (replyTo.startsWith(EXCHANGES)) {
      String topic = replyTo.substring(EXCHANGES.length());
      if (legal(topic)) {
        return new Topic(topic);
      }
    } else if (NAME.matcher(replyTo).matches()) {
      return new Queue(replyTo);
    }
    throw new InvalidRequestException(
        "reply-to '"
            + replyTo
            + "' is neither a reply queue name nor "
            + EXCHANGES
            + "<topic>: not an address this responder can use");
  }

  /**
   * The address of {@code replyTopic}.
   *
   * @throws IllegalArgumentException naming {@code replyTopic} if it is not a legal topic name
   */
  static String ofTopic(String replyTopic) {
    if (replyTopic == null || !legal(replyTopic)) {
      throw new IllegalArgumentException(
          "replyTopic must be a topic name (1-249 of [a-zA-Z0-9._-], not . or ..): " + replyTopic);
    }
    return new Topic(replyTopic).toString();
  }

  private static boolean legal(String name) {
    return NAME.matcher(name).matches() && !name.equals(".") && !name.equals("..");
  }
}
