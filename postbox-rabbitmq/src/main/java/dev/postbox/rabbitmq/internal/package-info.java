/**
 * The RabbitMQ adapter's parts: strict header text, the confirm tracking of one published batch,
 * the consumer's per-queue channels. Not an API.
 */
package dev.postbox.rabbitmq.internal;
