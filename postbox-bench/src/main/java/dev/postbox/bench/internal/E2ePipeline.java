package dev.postbox.bench.internal;

import dev.postbox.bench.internal.BenchEnv.Db;

/**
 * One pipeline of the end-to-end race: a streamer from the outbox to Kafka and a consumer applying
 * each message's effect in PostgreSQL, both reporting to an {@link E2eTimes}.
 */
interface E2ePipeline {

  /** The pipeline's part of the figure names ({@code cdc}, {@code polling}, ...). */
  String key();

  /** How it is configured, for the notes. */
  String how();

  /**
   * Starts the streamer on {@code db}'s outbox and the consumer on {@code topic} (the topic every
   * outbox row names), and returns once both are ready; closing stops both and drops what they left
   * on the server (a replication slot).
   */
  AutoCloseable start(BenchEnv env, Db db, String topic, E2eTimes times) throws Exception;
}
