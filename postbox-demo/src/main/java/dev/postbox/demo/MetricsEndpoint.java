package dev.postbox.demo;

import com.sun.net.httpserver.HttpServer;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.micrometer.MicrometerPostboxMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * A Prometheus scrape endpoint ({@code GET /metrics}, text format 0.0.4) on a JDK {@link
 * HttpServer}, bound to 127.0.0.1. The demo's relay and inventory processes serve their own
 * registry on the port given in the system property {@value #PORT_PROPERTY}; the demo serves the
 * merged view (see {@link DemoMetrics}).
 */
final class MetricsEndpoint implements AutoCloseable {

  /** System property with the port a child process serves its metrics on. */
  static final String PORT_PROPERTY = "postbox.metrics.port";

  private final HttpServer server;

  private MetricsEndpoint(HttpServer server) {
    this.server = server;
  }

  /** Serves {@code body} at {@code /metrics} on {@code port} (0: a free port). */
  static MetricsEndpoint start(int port, Supplier<String> body) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
    server.createContext(
        "/metrics",
        exchange -> {
          byte[] bytes;
          int status = 200;
          try {
            bytes = body.get().getBytes(StandardCharsets.UTF_8);
          } catch (RuntimeException e) {
            bytes = ("scrape failed: " + e).getBytes(StandardCharsets.UTF_8);
            status = 500;
          }
          exchange
              .getResponseHeaders()
              .set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
          exchange.sendResponseHeaders(status, bytes.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
          }
        });
    server.setExecutor(null);
    server.start();
    return new MetricsEndpoint(server);
  }

  /**
   * For a child process: when {@value #PORT_PROPERTY} is set, a Prometheus registry served on that
   * port and the metrics reporting to it; else none.
   */
  static Optional<PostboxMetrics> forChildProcess() {
    String port = System.getProperty(PORT_PROPERTY);
    if (port == null) {
      return Optional.empty();
    }
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try {
      start(Integer.parseInt(port), registry::scrape); // lives as long as the process
    } catch (IOException e) {
      // never fail the process for its metrics: run without an endpoint
      System.err.println("metrics endpoint on port " + port + " not started: " + e);
      return Optional.empty();
    }
    return Optional.of(MicrometerPostboxMetrics.of(registry));
  }

  /** The port served. */
  int port() {
    return server.getAddress().getPort();
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
