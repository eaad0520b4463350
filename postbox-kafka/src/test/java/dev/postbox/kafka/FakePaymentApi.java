package dev.postbox.kafka;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.postbox.core.consumer.Delivery;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small payment API for tests, on the JDK's HTTP server: {@code POST /charges} with the order as
 * the body charges it once per request, unless the request carries an {@code Idempotency-Key} seen
 * before: then it answers the stored response again and charges nothing (as Stripe and others do).
 */
final class FakePaymentApi implements AutoCloseable {

  static final String IDEMPOTENCY_KEY = "Idempotency-Key";

  private final HttpServer server;
  private final AtomicInteger chargeIds = new AtomicInteger();
  private final AtomicInteger requests = new AtomicInteger();
  private final Map<String, AtomicInteger> chargesPerOrder = new ConcurrentHashMap<>();
  private final Map<String, String> responsesByKey = new ConcurrentHashMap<>();

  FakePaymentApi() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/charges", this::charge);
    server.start();
  }

  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/charges";
  }

  private void charge(HttpExchange ex) throws IOException {
    try (ex) {
      requests.incrementAndGet();
      String order = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      String key = ex.getRequestHeaders().getFirst(IDEMPOTENCY_KEY);
      String response;
      if (key == null) {
        response = newCharge(order);
      } else {
        synchronized (responsesByKey) { // one charge per key, even for concurrent retries
          response = responsesByKey.computeIfAbsent(key, k -> newCharge(order));
        }
      }
      byte[] body = response.getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
    }
  }

  private String newCharge(String order) {
    chargesPerOrder.computeIfAbsent(order, o -> new AtomicInteger()).incrementAndGet();
    return "ch_" + chargeIds.incrementAndGet();
  }

  /** Charges made for {@code order}. */
  int charges(String order) {
    AtomicInteger n = chargesPerOrder.get(order);
    return n == null ? 0 : n.get();
  }

  /** Charges made in all. */
  int charges() {
    return chargesPerOrder.values().stream().mapToInt(AtomicInteger::get).sum();
  }

  /** Requests received in all (repeats included). */
  int requests() {
    return requests.get();
  }

  @Override
  public void close() {
    server.stop(0);
  }

  /**
   * The effect of a payment handler: charges the order named by the message key, with an {@code
   * Idempotency-Key} derived from the message id when {@code withKey}, and records the charge id as
   * the delivery's result.
   */
  static void chargeFor(HttpClient http, String url, boolean withKey, Delivery d)
      throws IOException, InterruptedException {
    HttpRequest.Builder req =
        HttpRequest.newBuilder(URI.create(url))
            .POST(HttpRequest.BodyPublishers.ofString(d.message().key().orElseThrow()));
    if (withKey) {
      req.header(IDEMPOTENCY_KEY, dev.postbox.core.IdempotencyKeys.of("charge", d.message()));
    }
    HttpResponse<String> r = http.send(req.build(), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new IOException("payment API answered " + r.statusCode());
    }
    d.recordResult(r.body());
  }
}
