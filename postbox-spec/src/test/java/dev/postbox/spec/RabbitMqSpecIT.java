package dev.postbox.spec;

import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link TransportSpec} on RabbitMQ: the test kit's shared node. Skipped as a whole, with one line
 * saying why and how to enable it, where RabbitMQ is neither installed nor given by {@code
 * POSTBOX_RABBITMQ_URL}; fails instead when {@code CI} is set.
 */
class RabbitMqSpecIT extends TransportSpec {

  private static RabbitMqServer server;

  @BeforeAll
  static void server() {
    server = RabbitMqServer.sharedOrSkip();
  }

  @Override
  protected Transport open(PostboxTestContext ctx) {
    return new RabbitTransport(ctx, server);
  }
}
