package dev.postbox.console;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
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

  /** The console's clock (ages, "unreachable since"). */
  @Bean
  java.time.Clock consoleClock() {
    return java.time.Clock.systemUTC();
  }

  @Bean
  Health health(ConsoleProperties settings, java.time.Clock consoleClock) {
    java.time.Duration retry = settings.getRetryUnreachableAfter();
    return new Health(
        new Dependency("database", retry, consoleClock),
        settings.getKafka().getBootstrapServers() == null
            ? java.util.Optional.empty()
            : java.util.Optional.of(new Dependency("kafka", retry, consoleClock)),
        settings.getRabbitmq().getUri() == null
            ? java.util.Optional.empty()
            : java.util.Optional.of(new Dependency("rabbitmq", retry, consoleClock)));
  }

  @Bean(destroyMethod = "close")
  CircuitDataSource consoleDataSource(ConsoleProperties settings, Health health) {
    ConsoleProperties.Db db = settings.getDb();
    if (db.getUrl() == null || db.getUrl().isBlank()) {
      throw new IllegalStateException(
          "postbox console: no database: give --pg-url or $POSTBOX_PG_URL (postbox.console.db.url)");
    }
    HikariConfig c = new HikariConfig();
    // PostgreSQL's default, named: left to detection, a pool whose first connection meets a
    // database
    // restart keeps isolation -1 and refuses every later connection (HikariCP #1944)
    c.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
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
    // a page waits at most this for a database that does not answer; the console starts without one
    c.setConnectionTimeout(db.getConnectionTimeout().toMillis());
    c.setValidationTimeout(Math.min(db.getConnectionTimeout().toMillis() - 1, 5_000));
    c.setInitializationFailTimeout(-1);
    return new CircuitDataSource(new HikariDataSource(c), health.database());
  }

  @Bean
  PostboxAdmin postboxAdmin(
      DataSource consoleDataSource,
      ConsoleProperties settings,
      org.springframework.beans.factory.ObjectProvider<KafkaLag> kafkaLag,
      org.springframework.beans.factory.ObjectProvider<RabbitLag> rabbitLag) {
    PostboxAdmin.Builder b =
        PostboxAdmin.builder(consoleDataSource)
            .decoder(RabbitDeadLetters.decoderOr(KafkaDeadLetters.decoder()))
            .ratePerSecond(settings.getReplayRate())
            .replayJobConfirmAbove(settings.getReplayJobs().getConfirmAbove());
    KafkaLag lag = kafkaLag.getIfAvailable();
    if (lag != null) {
      b.lagSource(lag);
    }
    RabbitLag queues = rabbitLag.getIfAvailable();
    if (queues != null) {
      b.queueLagSource(queues);
    }
    return b.build();
  }

  /**
   * Works the RUNNING replay jobs in the background (unless {@code
   * postbox.console.replay-jobs.run=false}); a job another console worked before it stopped is
   * taken over once that console's lease expires.
   */
  @Bean(destroyMethod = "close")
  @org.springframework.boot.autoconfigure.condition.ConditionalOnProperty(
      name = "postbox.console.replay-jobs.run",
      havingValue = "true",
      matchIfMissing = true)
  dev.postbox.admin.ReplayJobRunner replayJobRunner(
      PostboxAdmin postboxAdmin, ConsoleProperties settings) {
    String host;
    try {
      host = java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.net.UnknownHostException e) {
      host = "console";
    }
    String instance =
        "console-" + host + "-" + java.util.UUID.randomUUID().toString().substring(0, 8);
    return postboxAdmin
        .replayJobRunner(instance, settings.getReplayJobs().getPollInterval())
        .start();
  }

  /**
   * The Kafka lag of the dashboard, when brokers and groups are configured: probes with short
   * timeouts behind the Kafka circuit.
   */
  @Bean(destroyMethod = "close")
  @org.springframework.boot.autoconfigure.condition.ConditionalOnProperty(
      "postbox.console.kafka.bootstrap-servers")
  KafkaLag kafkaLag(ConsoleProperties settings, Health health) {
    ConsoleProperties.Kafka k = settings.getKafka();
    if (!k.configured()) {
      throw new IllegalStateException(
          "postbox.console.kafka.bootstrap-servers is set but postbox.console.kafka.groups is"
              + " empty: name the consumer groups whose lag the dashboard shows");
    }
    if (k.getClientTimeout().compareTo(k.getTimeout()) < 0) {
      throw new IllegalStateException(
          "postbox.console.kafka.client-timeout ("
              + k.getClientTimeout()
              + ") must not be shorter than postbox.console.kafka.timeout ("
              + k.getTimeout()
              + "): a page would stop waiting only after the reading failed");
    }
    String timeout = Long.toString(k.getClientTimeout().toMillis());
    return new KafkaLag(
        () ->
            ConsumerLagProbe.builder(k.getBootstrapServers())
                .groups(k.getGroups().toArray(String[]::new))
                .fetchTimeout(k.getClientTimeout())
                .clientProperty("request.timeout.ms", timeout)
                .clientProperty("default.api.timeout.ms", timeout)
                .clientProperty("socket.connection.setup.timeout.ms", timeout)
                .clientProperty("socket.connection.setup.timeout.max.ms", timeout)
                .build(),
        health.kafka().orElseThrow(),
        k.getTimeout());
  }

  /**
   * The RabbitMQ queue lag of the dashboard, when a broker and subscriptions are configured: a lag
   * probe with a short connection timeout behind the RabbitMQ circuit, reading the ages the
   * subscribers report to the database ({@code postbox_consumer_age}).
   */
  @Bean(destroyMethod = "close")
  @org.springframework.boot.autoconfigure.condition.ConditionalOnProperty(
      "postbox.console.rabbitmq.uri")
  RabbitLag rabbitLag(ConsoleProperties settings, Health health, DataSource consoleDataSource) {
    ConsoleProperties.Rabbitmq r = settings.getRabbitmq();
    if (r.getSubscriptions().isEmpty()) {
      throw new IllegalStateException(
          "postbox.console.rabbitmq.uri is set but "
              + RabbitSubscriptions.SETTING
              + " is empty: name the subscriptions whose queues the dashboard shows, each"
              + " subscription:shards:topic");
    }
    RabbitSubscriptions watched = RabbitSubscriptions.parse(r.getSubscriptions());
    if (r.getClientTimeout().compareTo(r.getTimeout()) < 0) {
      throw new IllegalStateException(
          "postbox.console.rabbitmq.client-timeout ("
              + r.getClientTimeout()
              + ") must not be shorter than postbox.console.rabbitmq.timeout ("
              + r.getTimeout()
              + "): a page would stop waiting only after the reading failed");
    }
    if (r.getStalledAfter().isNegative() || r.getStalledAfter().isZero()) {
      throw new IllegalStateException(
          "postbox.console.rabbitmq.stalled-after must be positive, was " + r.getStalledAfter());
    }
    String uri = withConnectionTimeout(r.getUri(), r.getClientTimeout());
    ConsoleAgeStore ages = new ConsoleAgeStore(consoleDataSource);
    java.util.function.Supplier<dev.postbox.rabbitmq.RabbitLagProbe> probes =
        () ->
            watched
                .watchedBy(dev.postbox.rabbitmq.RabbitLagProbe.builder(uri))
                .ages(ages)
                .stalledAfter(r.getStalledAfter())
                .build();
    try {
      probes.get().close(); // checks the URI and the subscriptions now, not at the first page
    } catch (IllegalArgumentException e) {
      // the builder's message repeats the URI, password and all: not in the log
      throw new IllegalStateException(
          "postbox.console.rabbitmq.uri is not an AMQP URI such as"
              + " amqp://user:pass@host:5672/vhost");
    }
    return new RabbitLag(probes, health.rabbitmq().orElseThrow(), r.getTimeout());
  }

  /**
   * {@code uri} with the client's TCP connection timeout ({@code connection_timeout}, in ms) unless
   * it names one.
   */
  static String withConnectionTimeout(String uri, java.time.Duration timeout) {
    if (uri.contains("connection_timeout=")) {
      return uri;
    }
    return uri + (uri.contains("?") ? "&" : "?") + "connection_timeout=" + timeout.toMillis();
  }
}
