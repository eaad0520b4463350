package dev.postbox.bench.internal;

import dev.postbox.testkit.RabbitMqServer;
import java.util.Optional;

/**
 * Where the benchmarks' RabbitMQ comes from: the broker named by {@value RabbitMqServer#URL_ENV},
 * else a private node of this machine's {@code rabbitmq-server} (the test kit's), else none (the
 * RabbitMQ figures are then skipped, one line saying why).
 */
final class RabbitNode {

  private RabbitNode() {}

  /** Why no RabbitMQ can be had, or empty when one can. */
  static Optional<String> unavailable() {
    if (external().isPresent() || RabbitMqServer.findScript().isPresent()) {
      return Optional.empty();
    }
    return Optional.of(
        "no rabbitmq-server installed and " + RabbitMqServer.URL_ENV + " is not set");
  }

  /**
   * The external broker, else a private node started now (stop it with {@link #release}).
   *
   * @throws IllegalStateException when there is neither ({@link #unavailable()} says why)
   */
  static RabbitMqServer start() {
    Optional<String> url = external();
    if (url.isPresent()) {
      return RabbitMqServer.external(url.get());
    }
    return RabbitMqServer.startPrivate(
        RabbitMqServer.findScript()
            .orElseThrow(() -> new IllegalStateException(unavailable().orElse("no RabbitMQ"))));
  }

  /** Stops {@code server} if this process started it; an external broker is left running. */
  static void release(RabbitMqServer server) {
    if (!server.isExternal()) {
      server.close();
    }
  }

  private static Optional<String> external() {
    String url = System.getenv(RabbitMqServer.URL_ENV);
    return url == null || url.isBlank() ? Optional.empty() : Optional.of(url);
  }
}
