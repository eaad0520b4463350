package dev.postbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@PostboxTest
class PostboxExtensionTest {

  private static final List<HikariDataSource> POOLS = new ArrayList<>();

  private PostboxTestContext fromBeforeEach;

  @BeforeEach
  void setUp(PostboxTestContext context) {
    fromBeforeEach = context;
  }

  @AfterAll
  static void poolsAreClosedAfterEachTest() {
    assertThat(POOLS).isNotEmpty().allSatisfy(pool -> assertThat(pool.isClosed()).isTrue());
  }

  @Test
  void producesAndConsumesARecord(PostboxTestContext context) throws Exception {
    assertThat(context).isSameAs(fromBeforeEach);
    String topic = context.topic("orders", 3);
    assertThat(topic).startsWith("orders-");
    assertThat(context.topic("orders")).isNotEqualTo(topic);

    try (KafkaProducer<String, String> producer =
        KafkaBrokerTest.producer(context.bootstrapServers())) {
      producer.send(new ProducerRecord<>(topic, "order-1", "created")).get(30, TimeUnit.SECONDS);
    }

    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, context.bootstrapServers());
    p.put(ConsumerConfig.GROUP_ID_CONFIG, "g-" + topic);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    List<ConsumerRecord<String, String>> received = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
      consumer.subscribe(List.of(topic));
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (received.isEmpty() && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(received::add);
      }
    }
    assertThat(received)
        .singleElement()
        .satisfies(r -> {
          assertThat(r.key()).isEqualTo("order-1");
          assertThat(r.value()).isEqualTo("created");
        });
  }

  @Test
  void givesEachTestItsOwnSchema(PostboxTestContext context) throws Exception {
    String schema = context.schema();
    assertThat(schema).startsWith("giveseachtestitsownschema_");
    HikariDataSource ds = context.dataSource();
    POOLS.add(ds);
    assertThat(context.dataSource()).isSameAs(ds);
    assertThat(query(ds, "SELECT current_schema()")).isEqualTo(schema);

    try (Connection c = DriverManager.getConnection(context.jdbcUrl())) {
      assertThat(query(c, "SELECT current_schema()")).isEqualTo(schema);
    }
  }

  @Test
  void schemasOfTwoContextsAreIsolated() throws Exception {
    try (PostboxTestContext a = PostboxTestContext.create("iso_a");
        PostboxTestContext b = PostboxTestContext.create("iso_a")) {
      assertThat(a.schema()).isNotEqualTo(b.schema());
      execute(a.dataSource(), "CREATE TABLE item (name text)");
      execute(b.dataSource(), "CREATE TABLE item (name text)");
      execute(a.dataSource(), "INSERT INTO item VALUES ('from a')");
      execute(b.dataSource(), "INSERT INTO item VALUES ('from b')");
      assertThat(query(a.dataSource(), "SELECT string_agg(name, ',') FROM item"))
          .isEqualTo("from a");
      assertThat(query(b.dataSource(), "SELECT string_agg(name, ',') FROM item"))
          .isEqualTo("from b");
      POOLS.add(a.dataSource());
      HikariDataSource extra = b.newDataSource(1);
      assertThat(extra.getMaximumPoolSize()).isEqualTo(1);
      POOLS.add(extra);
    }
  }

  @Test
  void sharedInfrastructureStartsOnce(PostboxTestContext context) {
    assertThat(context.kafka()).isSameAs(PostboxInfrastructure.shared().kafka());
    assertThat(context.postgres()).isSameAs(PostboxInfrastructure.shared().postgres());
    assertThat(context.kafka().isRunning()).isTrue();
  }

  private static void execute(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static String query(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection()) {
      return query(c, sql);
    }
  }

  private static String query(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
