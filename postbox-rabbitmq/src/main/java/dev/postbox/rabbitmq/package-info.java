/**
 * The RabbitMQ transport: {@link dev.postbox.rabbitmq.RabbitRelayPublisher} (the relay's publisher
 * with confirms), {@link dev.postbox.rabbitmq.RabbitMessages} (the one envelope mapping), {@link
 * dev.postbox.rabbitmq.RabbitTopology} (exchanges and shard queues) and the consumer adapter on the
 * core engine.
 */
package dev.postbox.rabbitmq;
