package dev.postbox.demo;

import dev.postbox.jdbc.OperationsProbe;
import dev.postbox.micrometer.MicrometerPostboxMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * The demo's Prometheus scrape endpoint. It serves, merged into one exposition:
 *
 * <ul>
 *   <li>its own registry: the tables read by {@link OperationsProbe} (pending outbox rows and the
 *       relay lag as time, stuck rows, dead letters and parked messages with the age of the oldest)
 *       and the inventory's lag read from outside ({@link LagGauges}): on Kafka its consumer
 *       group's (the age of the oldest unprocessed message, which keeps growing while a consumer is
 *       stopped), on RabbitMQ its shard queues' ready messages, consumers and stall;
 *   <li>each child process's own endpoint (relays: {@code postbox_relay_*}; the inventory: {@code
 *       postbox_consumer_*}, including the duplicates-suppressed counter), with a {@code process}
 *       label; a process that is paused or restarting is left out of that scrape.
 * </ul>
 *
 * <p>Merging keeps one {@code # HELP}/{@code # TYPE} header per metric family, as the text format
 * requires. Thread-safe.
 */
final class DemoMetrics implements AutoCloseable {

  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final LagGauges lag;
  private final Map<String, Integer> children = new ConcurrentHashMap<>();
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofMillis(500)).build();
  private final MetricsEndpoint endpoint;

  private DemoMetrics(int port, DataSource ds, ShopTransport transport, String group, String topic)
      throws IOException {
    MicrometerPostboxMetrics metrics = MicrometerPostboxMetrics.of(registry);
    OperationsProbe.builder(ds).stuckThreshold(Duration.ofSeconds(60)).build().bindTo(metrics);
    lag = transport.lagGauges(metrics, group, topic);
    endpoint = MetricsEndpoint.start(port, this::scrape);
  }

  /**
   * Starts the endpoint on {@code port} (0: a free port), with the lag gauges of {@code group}'s
   * subscription to {@code topic} on {@code transport}.
   */
  static DemoMetrics start(
      int port, DataSource ds, ShopTransport transport, String group, String topic)
      throws IOException {
    return new DemoMetrics(port, ds, transport, group, topic);
  }

  /** The endpoint's URL. */
  String url() {
    return "http://127.0.0.1:" + endpoint.port() + "/metrics";
  }

  /**
   * The port child process {@code process} serves its metrics on (chosen free on first use, the
   * same for its restarts), to pass it in {@value MetricsEndpoint#PORT_PROPERTY}.
   */
  int portFor(String process) {
    return children.computeIfAbsent(
        process,
        p -> {
          try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
          } catch (IOException e) {
            throw new IllegalStateException("no free port for " + p, e);
          }
        });
  }

  /** The merged exposition (what {@code GET /metrics} returns). */
  String scrape() {
    try {
      lag.refresh();
    } catch (RuntimeException e) {
      // gauges read NaN while the broker cannot be reached
    }
    Map<String, Family> families = new LinkedHashMap<>();
    merge(families, registry.scrape(), null);
    // the children in parallel: one that is busy or paused costs one timeout, not one each
    Map<String, java.util.concurrent.CompletableFuture<String>> bodies = new TreeMap<>();
    children.forEach((process, port) -> bodies.put(process, fetch(port)));
    bodies.forEach((process, body) -> merge(families, body.join(), process));
    StringBuilder out = new StringBuilder();
    for (Family f : families.values()) {
      f.header.forEach(h -> out.append(h).append('\n'));
      f.samples.forEach(s -> out.append(s).append('\n'));
    }
    return out.toString();
  }

  /**
   * The scrape as {@code name{labels}} to value, without histogram buckets and NaN values (for the
   * report's {@code metrics}).
   */
  Map<String, Double> snapshot() {
    Map<String, Double> out = new TreeMap<>();
    for (String line : scrape().split("\n")) {
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      int space = line.lastIndexOf(' ');
      String series = line.substring(0, space);
      if (series.contains("_bucket{")) {
        continue;
      }
      double value = Double.parseDouble(line.substring(space + 1));
      if (!Double.isNaN(value)) {
        out.put(series, value);
      }
    }
    return out;
  }

  /** A child's exposition; empty when it does not answer within 3 s. */
  private java.util.concurrent.CompletableFuture<String> fetch(int port) {
    return http.sendAsync(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                .timeout(Duration.ofSeconds(3))
                .build(),
            HttpResponse.BodyHandlers.ofString())
        .thenApply(r -> r.statusCode() == 200 ? r.body() : "")
        // paused (SIGSTOP), restarting or gone: left out of this scrape
        .exceptionally(e -> "");
  }

  /** One metric family: its {@code # HELP}/{@code # TYPE} lines and samples. */
  private static final class Family {
    final List<String> header = new ArrayList<>();
    final List<String> samples = new ArrayList<>();
  }

  /** Adds the families of {@code text}, labelling its samples {@code process} when not null. */
  private static void merge(Map<String, Family> families, String text, String process) {
    Family current = null;
    for (String line : text.split("\n")) {
      if (line.isBlank()) {
        continue;
      }
      if (line.startsWith("# HELP ") || line.startsWith("# TYPE ")) {
        String name = line.substring(7).split(" ", 2)[0];
        current = families.computeIfAbsent(name, n -> new Family());
        if (!current.header.contains(line)) {
          current.header.add(line);
        }
        continue;
      }
      if (line.startsWith("#") || current == null) {
        continue;
      }
      current.samples.add(process == null ? line : withLabel(line, "process", process));
    }
  }

  private static String withLabel(String sample, String name, String value) {
    String label = name + "=\"" + value + "\"";
    int brace = sample.indexOf('{');
    int space = sample.indexOf(' ');
    if (brace >= 0 && brace < space) {
      return sample.substring(0, brace + 1) + label + "," + sample.substring(brace + 1);
    }
    return sample.substring(0, space) + "{" + label + "}" + sample.substring(space);
  }

  @Override
  public void close() {
    endpoint.close();
    lag.close();
  }
}
