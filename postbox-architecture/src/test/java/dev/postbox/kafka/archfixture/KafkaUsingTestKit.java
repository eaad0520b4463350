package dev.postbox.kafka.archfixture;

import dev.postbox.testkit.PostgresServer;

/** Breaks "production code never uses the test kit" on purpose. */
public final class KafkaUsingTestKit {
  private KafkaUsingTestKit() {}

  public static Object server(PostgresServer server) {
    return server;
  }
}
