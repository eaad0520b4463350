package dev.postbox.core.engine.reply;

import dev.postbox.core.Message;
import java.util.concurrent.CompletableFuture;

/**
 * What a transport gives a {@link RequesterEngine}: its reply address and a way to send a request.
 * The transport also reads the replies at that address and hands each to {@link
 * RequesterEngine#replyReceived}.
 */
public interface RequestTransport {

  /** This requester's reply address, the value of the request's {@code reply-to} header. */
  String replyAddress();

  /** Sends {@code request}; the future completes when the broker has accepted it. */
  CompletableFuture<Void> send(Message request);
}
