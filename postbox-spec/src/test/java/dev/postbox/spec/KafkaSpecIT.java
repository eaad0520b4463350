package dev.postbox.spec;

import dev.postbox.testkit.PostboxTestContext;

/** {@link TransportSpec} on Kafka: the test kit's shared broker. */
class KafkaSpecIT extends TransportSpec {

  @Override
  protected Transport open(PostboxTestContext ctx) {
    return new KafkaTransport(ctx);
  }
}
