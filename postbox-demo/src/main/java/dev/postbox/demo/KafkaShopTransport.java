package dev.postbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Message;
import dev.postbox.core.reply.LateReplyListener;
import dev.postbox.core.reply.Requester;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.kafka.KafkaDeadLetters;
import dev.postbox.kafka.KafkaRequester;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.KafkaCluster;
import dev.postbox.testkit.PostboxInfrastructure;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.ObjIntConsumer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/**
 * The shop on the test kit's Kafka broker (the demo's default) or on its three-broker {@link
 * KafkaCluster} ({@code --cluster}): see {@link ShopTransport}.
 */
final class KafkaShopTransport implements ShopTransport {

  private final String bootstrapServers;
  private final ObjIntConsumer<String> topicCreator; // name, partitions
  private final String description;

  private KafkaShopTransport(
      String bootstrapServers, ObjIntConsumer<String> topicCreator, String description) {
    this.bootstrapServers = bootstrapServers;
    this.topicCreator = topicCreator;
    this.description = description;
  }

  static KafkaShopTransport start() {
    KafkaBroker kafka = PostboxInfrastructure.shared().kafka();
    return new KafkaShopTransport(
        kafka.bootstrapServers(), kafka::createTopic, "Kafka broker process");
  }

  /** The shop on {@code cluster} (started): topics with replication factor 3. */
  static KafkaShopTransport on(KafkaCluster cluster) {
    return new KafkaShopTransport(
        cluster.bootstrapServers(),
        cluster::createTopic,
        "Kafka cluster of "
            + cluster.size()
            + " brokers (KRaft; replication factor 3, min.insync.replicas=2)");
  }

  @Override
  public Kind kind() {
    return Kind.KAFKA;
  }

  @Override
  public String address() {
    return bootstrapServers;
  }

  @Override
  public String describe() {
    return description;
  }

  @Override
  public void createTopics(String ordersTopic, String stockTopic, String inventoryGroup) {
    topicCreator.accept(ordersTopic, 6);
    topicCreator.accept(stockTopic, 3);
  }

  @Override
  public void createPaymentTopics(String requestTopic, String replyTopic, String paymentsGroup) {
    topicCreator.accept(requestTopic, 3);
    topicCreator.accept(replyTopic, 1);
  }

  @Override
  public Requester requester(String replyTopic, LateReplyListener late) {
    return KafkaRequester.builder(bootstrapServers, replyTopic)
        .name("orders")
        .lateReplyListener(late)
        .build()
        .start();
  }

  @Override
  public LagGauges lagGauges(
      dev.postbox.core.metrics.PostboxMetrics metrics, String group, String topic) {
    dev.postbox.kafka.ConsumerLagProbe probe =
        dev.postbox.kafka.ConsumerLagProbe.builder(bootstrapServers)
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
    observer.consume(bootstrapServers, topic, running);
  }

  @Override
  public long notYetDone(HikariDataSource ds, String group, String topic) throws Exception {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
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
