/**
 * Request/reply over messaging: a {@link dev.postbox.core.reply.Requester} sends a request and
 * waits for its {@link dev.postbox.core.reply.Reply} (matched by correlation id = the request's
 * message id, on a reply address of its own), and a responder answers it through an {@code
 * EFFECTIVELY_ONCE} subscription whose {@link dev.postbox.core.reply.ReplyHandler} runs in the
 * request's inbox transaction: the reply is stored with the inbox row, so a repeated request gets
 * the same reply again without the effect running twice. Transport-neutral; the transports are in
 * their adapters ({@code KafkaRequester}, {@code RabbitRequester} and their responders).
 *
 * <p>Use it sparingly: for slow or spiky operations where the caller wants an answer but should not
 * block the server (requests wait in the broker while the responder is busy or restarting). For
 * consequences, publish plain events; for quick queries, a synchronous call is simpler.
 */
package dev.postbox.core.reply;
