/**
 * The transport-neutral part of request/reply: the requester's correlation ({@link
 * dev.postbox.core.engine.reply.PendingRequests}: in-flight requests, timeouts on injected time,
 * the bound, late, duplicate and unknown replies), the requester a transport completes with a
 * {@link dev.postbox.core.engine.reply.RequestTransport} ({@link
 * dev.postbox.core.engine.reply.RequesterEngine}), and the responder's handler ({@link
 * dev.postbox.core.engine.reply.ResponderHandler}) that stores each reply with the request's inbox
 * row and sends it through a {@link dev.postbox.core.engine.reply.ReplySender}. Used by core and
 * adapter modules only; applications use {@code dev.postbox.core.reply} and the adapters' classes.
 */
package dev.postbox.core.engine.reply;
