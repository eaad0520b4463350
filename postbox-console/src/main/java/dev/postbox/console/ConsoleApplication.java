package dev.postbox.console;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.admin.ConsumerLagSource;
import dev.postbox.admin.PostboxAdmin;
import dev.postbox.kafka.ConsumerLagProbe;
import dev.postbox.kafka.KafkaDeadLetters;
import dev.postbox.rabbitmq.RabbitDeadLetters;
import javax.sql.DataSource;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * The web console: a Spring Boot application on the operations API ({@link PostboxAdmin}) of one
 * database. Start it with {@code ./postbox console} ({@link ConsoleCommand}) or as any Spring Boot
 * application with the {@code postbox.console.*} settings.
 */
@SpringBootApplication
@EnableConfigurationProperties(ConsoleProperties.class)
public class ConsoleApplication {

  /** Starts the console with Spring Boot's arguments ({@code --server.port=...}). */
  public static ConfigurableApplicationContext start(String... args) {
    return SpringApplication.run(ConsoleApplication.class, args);
  }

  @Bean(destroyMethod = "close")
  DataSource consoleDataSource(ConsoleProperties settings) {
    ConsoleProperties.Db db = settings.getDb();
    if (db.getUrl() == null || db.getUrl().isBlank()) {
      throw new IllegalStateException(
          "postbox console: no database: give --pg-url or $POSTBOX_PG_URL (postbox.console.db.url)");
    }
    HikariConfig c = new HikariConfig();
    String url = db.getUrl();
    c.setJdbcUrl(
        url.startsWith("postgres")
            ? "jdbc:" + url.replaceFirst("^postgres(ql)?:", "postgresql:")
            : url);
    if (db.getUser() != null) {
      c.setUsername(db.getUser());
    }
    if (db.getPassword() != null) {
      c.setPassword(db.getPassword());
    }
    if (db.getSchema() != null && !db.getSchema().isBlank()) {
      c.setSchema(db.getSchema());
    }
    c.setMaximumPoolSize(5);
    c.setPoolName("postbox-console");
    return new HikariDataSource(c);
  }

  @Bean
  PostboxAdmin postboxAdmin(
      DataSource consoleDataSource,
      ConsoleProperties settings,
      org.springframework.beans.factory.ObjectProvider<ConsumerLagProbe> lagProbe) {
    PostboxAdmin.Builder b =
        PostboxAdmin.builder(consoleDataSource)
            .decoder(RabbitDeadLetters.decoderOr(KafkaDeadLetters.decoder()))
            .ratePerSecond(settings.getReplayRate());
    ConsumerLagProbe probe = lagProbe.getIfAvailable();
    if (probe != null) {
      b.lagSource(() ->
          probe.read().stream()
              .map(p ->
                  new ConsumerLagSource.PartitionLag(
                      p.group(), p.topic(), p.partition(), p.offsetLag(), p.oldestUnprocessedAge()))
              .toList());
    }
    return b.build();
  }

  /** The Kafka lag probe of the dashboard, when brokers and groups are configured. */
  @Bean(destroyMethod = "close")
  @org.springframework.boot.autoconfigure.condition.ConditionalOnProperty(
      "postbox.console.kafka.bootstrap-servers")
  ConsumerLagProbe consumerLagProbe(ConsoleProperties settings) {
    ConsoleProperties.Kafka k = settings.getKafka();
    if (!k.configured()) {
      throw new IllegalStateException(
          "postbox.console.kafka.bootstrap-servers is set but postbox.console.kafka.groups is"
              + " empty: name the consumer groups whose lag the dashboard shows");
    }
    return ConsumerLagProbe.builder(k.getBootstrapServers())
        .groups(k.getGroups().toArray(String[]::new))
        .build();
  }
}
