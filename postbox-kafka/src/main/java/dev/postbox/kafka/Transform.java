package dev.postbox.kafka;

import dev.postbox.core.Message;

/**
 * The handler of a {@link KafkaTransformer}: reads one input message and emits any number of output
 * messages, which are produced in the same Kafka transaction as the input's offset. It may run
 * again for the same input (an aborted transaction is retried), so it must have no effect outside
 * what it emits.
 */
@FunctionalInterface
public interface Transform {

  /** Handles {@code input}, emitting its outputs to {@code out}. */
  void apply(Message input, Emitter out) throws Exception;

  /** Where a transform's outputs go: into the current transaction. */
  @FunctionalInterface
  interface Emitter {
    /** Produces {@code message} to its topic (keyed by its key) in the current transaction. */
    void emit(Message message);
  }
}
