/**
 * The message envelope (Message, MessageId, Payload, headers), backoff, crash points and the
 * exceptions every module shares.
 */
package dev.postbox.core;
