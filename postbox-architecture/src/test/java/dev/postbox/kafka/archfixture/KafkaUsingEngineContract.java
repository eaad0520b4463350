package dev.postbox.kafka.archfixture;

import dev.postbox.core.engine.OffsetTracker;

/** Keeps the rule: an adapter using a class of the declared engine contract is allowed. */
public final class KafkaUsingEngineContract {
  private KafkaUsingEngineContract() {}

  public static Object tracker(OffsetTracker tracker) {
    return tracker;
  }
}
