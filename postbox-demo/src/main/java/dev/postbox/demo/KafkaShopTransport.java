package dev.postbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Message;
import dev.postbox.core.reply.LateReplyListener;
import dev.postbox.core.reply.Requester;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.kafka.KafkaDeadLetters;
import dev.postbox.kafka.KafkaRequester;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.PostboxInfrastructure;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/** The shop on the test kit's Kafka broker (the demo's default): see {@link ShopTransport}. */
final class KafkaShopTransport implements ShopTransport {

  private final KafkaBroker kafka;

  private KafkaShopTransport(KafkaBroker kafka) {
    this.kafka = kafka;
  }

  static KafkaShopTransport start() {
    return new KafkaShopTransport(PostboxInfrastructure.shared().kafka());
  }

  @Override
  public Kind kind() {
    return Kind.KAFKA;
  }

  @Override
  public String address() {
    return kafka.bootstrapServers();
  }

  @Override
  public String describe() {
    return "Kafka broker process";
  }

  @Override
  public void createTopics(String ordersTopic, String stockTopic, String inventoryGroup) {
    kafka.createTopic(ordersTopic, 6);
    kafka.createTopic(stockTopic, 3);
  }

  @Override
  public void createPaymentTopics(String requestTopic, String replyTopic, String paymentsGroup) {
    kafka.createTopic(requestTopic, 3);
    kafka.createTopic(replyTopic, 1);
  }

  @Override
  public Requester requester(String replyTopic, LateReplyListener late) {
    return KafkaRequester.builder(kafka.bootstrapServers(), replyTopic)
        .name("orders")
        .lateReplyListener(late)
        .build()
        .start();
  }

  @Override
  public LagGauges lagGauges(
      dev.postbox.core.metrics.PostboxMetrics metrics, String group, String topic) {
    dev.postbox.kafka.ConsumerLagProbe probe =
        dev.postbox.kafka.ConsumerLagProbe.builder(kafka.bootstrapServers())
            .groups(group)
            .build()
            .bindTo(metrics);
    return new LagGauges() {
      @Override
      public void refresh() {
        probe.read();
      }

      @Override
      public void close() {
        probe.close();
      }
    };
  }

  @Override
  public void observe(String topic, ShopObserver observer, AtomicBoolean running) {
    observer.consume(kafka.bootstrapServers(), topic, running);
  }

  @Override
  public long notYetDone(HikariDataSource ds, String group, String topic) throws Exception {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    try (Admin admin = Admin.create(p)) {
      return ShopAudit.lag(admin, group, topic);
    }
  }

  @Override
  public Function<DeadLetter, Message> deadLetterDecoder() {
    return KafkaDeadLetters.decoder();
  }

  @Override
  public String heldKeysQuery() {
    return "SELECT DISTINCT msg_key FROM postbox_parked";
  }
}
