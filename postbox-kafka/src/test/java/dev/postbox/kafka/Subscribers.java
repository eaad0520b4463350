package dev.postbox.kafka;

import java.util.ArrayList;
import java.util.List;

/** Subscribers started by a test, all closed after it (register with {@code @AfterEach}). */
abstract class Subscribers {

  protected final List<KafkaSubscriber> subscribers = new ArrayList<>();

  @org.junit.jupiter.api.AfterEach
  void closeSubscribers() {
    subscribers.forEach(KafkaSubscriber::close);
  }

  /** Builds, remembers and starts a subscriber. */
  protected KafkaSubscriber start(KafkaSubscriber.Builder b) {
    KafkaSubscriber s = b.build();
    subscribers.add(s);
    s.start();
    return s;
  }
}
