package dev.postbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.testkit.RabbitMqServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo on RabbitMQ ({@code ./postbox demo --transport rabbitmq}), smaller than {@link
 * ShopDemoIT}: the same story (a relay halted between the confirm and the mark, the inventory
 * halted between an effect's commit and its ack, every order.created published twice, poison
 * dead-lettered and the fixable ones replayed, a warehouse outage whose keys are held back in
 * order) and the same invariants, plus {@code transport}. Skipped without RabbitMQ outside CI (the
 * test kit's {@link RabbitMqServer#sharedOrSkip()}).
 */
// a whole campaign/demo run in one method: longer than the default 10 minutes per test
@Timeout(value = 20, unit = TimeUnit.MINUTES)
class RabbitShopDemoIT {

  @Test
  void theShopOnRabbitMqLosesNothingKeepsOrderAndAppliesEachOrderOnce(@TempDir Path dir)
      throws Exception {
    RabbitShopTransport.use(RabbitMqServer.sharedOrSkip());
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    DemoReport report =
        new ShopDemo(
                new ShopDemo.Options(300, 30, 3, 2, 500, 3, 100, Duration.ofMinutes(2), dir, 12),
                new PrintStream(new Tee(log, System.out), true, StandardCharsets.UTF_8),
                ShopTransport.Kind.RABBITMQ)
            .run();
    String output = log.toString(StandardCharsets.UTF_8);
    assertThat(report.transport()).isEqualTo("rabbitmq");
    assertThat(report.relayCrashes()).as(output).isEqualTo(1);
    assertThat(report.consumerCrashes()).as(output).isEqualTo(1);
    assertThat(report.missing()).as(output).isZero();
    assertThat(report.orderViolations()).as(output).isZero();
    assertThat(report.unexpected()).isZero();
    // warm-up, orders, other customers' orders during the outage, wholesale, unknown-product
    long orders = 200 + 300 + 50 + 30 + 3;
    assertThat(report.orders()).isEqualTo(orders);
    assertThat(report.committed()).isEqualTo(orders + 4 + 500);
    assertThat(report.published()).isEqualTo(report.committed());
    assertThat(report.effectsApplied()).as(output).isEqualTo(orders);
    assertThat(report.duplicateEffects()).isZero();
    assertThat(report.duplicatesSuppressed()).isGreaterThanOrEqualTo(200 + 300);
    assertThat(report.stockActual()).isEqualTo(report.stockExpected());
    assertThat(report.deadLetteredBeforeReplay()).as(output).isEqualTo(7);
    assertThat(report.replayed()).as(output).isEqualTo(3);
    assertThat(report.appliedAfterReplay()).isEqualTo(3);
    assertThat(report.deadLettered()).isEqualTo(4);
    assertThat(report.parkedKeys()).as(output).isPositive();
    assertThat(report.parkedOrderViolations()).isZero();
    assertThat(report.ok()).as(report.toText() + "\n" + output).isTrue();
    // the metrics endpoint's lag gauges read the inventory's shard queues: each has its consumers
    assertThat(
            report.metrics().entrySet().stream()
                .filter(e -> e.getKey().startsWith("postbox_queue_consumers{"))
                .filter(e -> e.getValue() > 0)
                .count())
        .as(report.metrics().toString())
        .isEqualTo(RabbitShopTransport.SHARDS);
    assertThat(report.metrics().keySet())
        .anyMatch(k -> k.startsWith("postbox_queue_ready_messages{"))
        .anyMatch(k -> k.startsWith("postbox_queue_stalled{"));

    System.out.println(report.toText());
    Path json = dir.resolve("report.json");
    report.writeJson(json);
    System.out.println(Files.readString(json));
    JsonNode node = new ObjectMapper().readTree(Files.readString(json));
    assertThat(node.get("transport").asText()).isEqualTo("rabbitmq");
    assertThat(node.get("effects_applied").asLong()).isEqualTo(orders);
    PaymentsChecks.check(report, node, output);
  }

  /** Keeps the demo's output for the assertions and shows it as it comes (a long run). */
  private static final class Tee extends java.io.OutputStream {
    private final java.io.OutputStream a;
    private final java.io.OutputStream b;

    Tee(java.io.OutputStream a, java.io.OutputStream b) {
      this.a = a;
      this.b = b;
    }

    @Override
    public void write(int c) throws java.io.IOException {
      a.write(c);
      b.write(c);
    }

    @Override
    public void write(byte[] buf, int off, int len) throws java.io.IOException {
      a.write(buf, off, len);
      b.write(buf, off, len);
    }

    @Override
    public void flush() throws java.io.IOException {
      a.flush();
      b.flush();
    }
  }
}
