package dev.postbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.PostboxInfrastructure;
import dev.postbox.testkit.PostgresServer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A quick side-by-side measurement of the consumer runtime: records/s for each delivery guarantee
 * on 1 and 6 partitions, each record applying one row to PostgreSQL (in the inbox transaction for
 * EFFECTIVELY_ONCE). Not a test; the benchmark harness proper comes with the benchmarks milestone.
 * Arguments: [records] (default 20000).
 */
public final class ConsumerThroughput {

  private ConsumerThroughput() {}

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
    PostboxInfrastructure infra = PostboxInfrastructure.shared();
    PostgresServer pg = infra.postgres();
    KafkaBroker kafka = infra.kafka();
    String schema = pg.createSchema("tput");
    try (HikariDataSource ds = pg.dataSource(schema, 40)) {
      PostboxMigrations.migrate(ds);
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        s.execute("CREATE TABLE effect (consumer text, message_id uuid, k text)");
      }
      System.out.printf("%-18s %-10s %-8s %12s%n", "guarantee", "partitions", "mode", "records/s");
      for (int partitions : new int[] {1, 6}) {
        String topic = "tput." + schema + "." + partitions;
        kafka.createTopic(topic, partitions);
        produce(kafka.bootstrapServers(), topic, n);
        if (partitions == 1) { // warm-up (JIT, connections), not printed
          run(ds, kafka.bootstrapServers(), topic, DeliveryGuarantee.AT_LEAST_ONCE, 0, n, 1);
        }
        for (DeliveryGuarantee g : DeliveryGuarantee.values()) {
          run(ds, kafka.bootstrapServers(), topic, g, partitions, n, 1);
        }
        run(
            ds,
            kafka.bootstrapServers(),
            topic,
            DeliveryGuarantee.EFFECTIVELY_ONCE,
            partitions,
            n,
            100);
      }
    }
    System.exit(0);
  }

  private static void run(
      HikariDataSource ds,
      String bootstrap,
      String topic,
      DeliveryGuarantee g,
      int partitions,
      int n,
      int batch)
      throws Exception {
    String name = "tput-" + g + "-" + topic + "-" + partitions + "-" + batch;
    Subscription sub =
        Subscription.builder(name)
            .topics(topic)
            .guarantee(g)
            .concurrency(32)
            .batchSize(batch)
            .build();
    KafkaSubscriber.Builder b = KafkaSubscriber.builder(bootstrap, sub);
    if (g == DeliveryGuarantee.EFFECTIVELY_ONCE) {
      b.inbox(PostgresInboxStore.create(ds));
      if (batch > 1) {
        b.batchHandler(deliveries -> {
          Connection c = deliveries.get(0).connection().orElseThrow();
          try (PreparedStatement ps = c.prepareStatement("INSERT INTO effect VALUES (?, ?, ?)")) {
            for (Delivery d : deliveries) {
              bind(ps, name, d);
              ps.addBatch();
            }
            ps.executeBatch();
          }
        });
      } else {
        b.handler(d -> insert(d.connection().orElseThrow(), name, d));
      }
    } else {
      b.handler(d -> {
        try (Connection c = ds.getConnection()) {
          insert(c, name, d);
        }
      });
    }
    long t0 = System.nanoTime();
    try (KafkaSubscriber s = b.build()) {
      s.start();
      while (s.stats().applied() + s.stats().duplicatesSuppressed() < n) {
        Thread.sleep(20);
      }
      double secs = (System.nanoTime() - t0) / 1e9;
      if (partitions == 0) {
        return;
      }
      System.out.printf(
          "%-18s %-10d %-8s %,12.0f%n",
          g, partitions, batch > 1 ? "batch" + batch : "single", n / secs);
    }
  }

  private static void insert(Connection c, String name, Delivery d) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO effect VALUES (?, ?, ?)")) {
      bind(ps, name, d);
      ps.executeUpdate();
    }
  }

  private static void bind(PreparedStatement ps, String name, Delivery d) throws SQLException {
    ps.setString(1, name);
    ps.setObject(2, d.message().id());
    ps.setString(3, d.message().key().orElse(null));
  }

  private static void produce(String bootstrap, String topic, int n) throws Exception {
    Map<String, Object> p = new HashMap<>();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.LINGER_MS_CONFIG, 20);
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, 131072);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      List<Future<?>> fs = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Message m =
            Message.builder(topic, "order.created")
                .key("key-" + (i % 1000))
                .jsonPayload("{\"n\":" + i + ",\"pad\":\"" + "x".repeat(150) + "\"}")
                .build();
        fs.add(producer.send(KafkaRecords.toRecord(m)));
      }
      for (Future<?> f : fs) {
        f.get();
      }
    }
  }
}
