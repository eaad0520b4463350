package dev.postbox.bench.internal;

import dev.postbox.bench.internal.BenchEnv.Db;
import java.util.List;

/**
 * One pipeline of the end-to-end race: a streamer from the outbox to a broker and a consumer
 * applying each message's effect in PostgreSQL, both reporting to an {@link E2eTimes}.
 */
interface E2ePipeline {

  /** The pipeline's part of the figure names ({@code cdc}, {@code polling}, ...). */
  String key();

  /** How it is configured, for the notes. */
  String how();

  /**
   * Whether its consumer shows when it received each message (the hops on either side of the
   * receipt are measured); default yes.
   */
  default boolean receives() {
    return true;
  }

  /** What its three hops are, for the notes; default Kafka's. */
  default List<String> hops() {
    return E2eReport.KAFKA_HOPS;
  }

  /**
   * Starts what the run needs beyond the shared servers (default nothing: the test kit's Kafka
   * broker serves every run); closing stops it. Called before {@link #topic}.
   */
  default AutoCloseable broker() throws Exception {
    return () -> {};
  }

  /**
   * A new topic for one run, ready for the streamer and the consumer (default: a Kafka topic
   * stamped by the broker at append, primed).
   */
  default String topic(BenchEnv env) throws Exception {
    return env.primedTopic("e2e", ConsumerBench.PARTITIONS, BrokerAckTimes.TOPIC_CONFIG);
  }

  /**
   * Starts the streamer on {@code db}'s outbox and the consumer on {@code topic} (the topic every
   * outbox row names), and returns once both are ready; closing stops both and drops what they left
   * on the server (a replication slot, queues).
   */
  AutoCloseable start(BenchEnv env, Db db, String topic, E2eTimes times) throws Exception;
}
