package dev.postbox.core.engine.reply;

import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.reply.InvalidRequestException;
import dev.postbox.core.reply.ReplyHandler;
import dev.postbox.core.reply.RequestReplyHeaders;
import dev.postbox.core.tracing.TraceHeaders;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * The handler of a responder's {@code EFFECTIVELY_ONCE} subscription: checks that a request can be
 * answered (a reply address and a correlation id, else an {@link InvalidRequestException}: dead
 * letter), runs the {@link ReplyHandler} in the request's inbox transaction and records its payload
 * as the delivery's result (stored with the inbox row), then, after the commit, sends the reply. A
 * duplicate request is not handled again: the engine hands {@link #completed} the stored reply,
 * which is sent again, identical but for its time (its id is derived from the request's).
 *
 * <p>If the reply cannot be sent, the attempt fails: the failure handler retries it (the retry
 * finds the request applied and sends the stored reply) and gives it up per its policy, with the
 * reason in the dead letter. Thread-safe.
 */
public final class ResponderHandler implements MessageHandler {

  private final ReplyHandler handler;
  private final ReplySender sender;
  private final String replyType;
  private final String source;
  private final Clock clock;

  /**
   * Replies of type {@code replyType} (null: the request's type plus {@code .reply}) from {@code
   * source}, sent with {@code sender}.
   */
  public ResponderHandler(
      ReplyHandler handler, ReplySender sender, String replyType, String source, Clock clock) {
    this.handler = Objects.requireNonNull(handler, "handler");
    this.sender = Objects.requireNonNull(sender, "sender");
    this.replyType = replyType;
    this.source = Objects.requireNonNull(source, "source");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  @Override
  public void handle(Delivery delivery) throws Exception {
    Message request = delivery.message();
    String replyTo = replyTo(request);
    sender.topicOf(replyTo); // an address of another transport: invalid, before the effect
    Payload reply =
        Objects.requireNonNull(handler.handle(delivery), "the reply handler returned null");
    delivery.recordResult(reply);
  }

  @Override
  public void completed(Delivery delivery, Optional<Payload> result, boolean duplicate)
      throws Exception {
    Message request = delivery.message();
    if (result.isEmpty()) {
      // applied before this responder stored replies (or by another handler): nothing to resend
      throw new InvalidRequestException(
          "request " + request.id() + " was applied before, but no reply was stored with it");
    }
    String replyTo = replyTo(request);
    sender.send(replyTo, reply(request, result.get(), sender.topicOf(replyTo)));
  }

  /** The reply to {@code request}: same correlation id, caused by it, id derived from its id. */
  Message reply(Message request, Payload payload, String topic) {
    Map<String, String> headers = TraceHeaders.withCurrent(new LinkedHashMap<>());
    Message.Builder b =
        Message.builder(topic, replyType != null ? replyType : request.type() + ".reply")
            .id(replyId(request.id()))
            .source(source)
            .clock(clock)
            .causedBy(request)
            .payload(payload);
    request.key().ifPresent(b::key);
    headers.forEach(b::header);
    return b.build();
  }

  /**
   * The reply's id: the same for every reply to one request, so a resent reply is the same (also
   * what {@code ./postbox trace} shows as a stored result's reply id).
   */
  public static UUID replyId(UUID requestId) {
    return UUID.nameUUIDFromBytes(("postbox-reply:" + requestId).getBytes(StandardCharsets.UTF_8));
  }

  private static String replyTo(Message request) {
    Optional<String> replyTo = request.header(RequestReplyHeaders.REPLY_TO);
    if (replyTo.isEmpty() || replyTo.get().isBlank()) {
      throw new InvalidRequestException(
          "request "
              + request.id()
              + " ("
              + request.type()
              + ") has no reply address (header "
              + RequestReplyHeaders.REPLY_TO
              + "): it cannot be answered");
    }
    if (request.correlationId().isEmpty()) {
      throw new InvalidRequestException(
          "request "
              + request.id()
              + " ("
              + request.type()
              + ") has no correlation id: its reply could not be matched");
    }
    return replyTo.get();
  }
}
