package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * A RabbitMQ application that excluded {@code postbox-kafka} (and so Kafka's client) starts: the
 * starter runs in a class loader made of the test class path without any Kafka jar or class
 * directory, with {@code postbox.transport: rabbitmq}, and wires {@link RabbitWiring}, the
 * publisher and the health indicator without loading a Kafka type (one would fail with {@code
 * NoClassDefFoundError}). Nothing connects: the relay is off, there are no listeners and Postbox's
 * migrations are left to the application.
 */
class WithoutKafkaTest {

  /** Started inside the isolated class loader; returns the transport wiring's class name. */
  public static final class App implements Supplier<String> {
    @Override
    public String get() {
      try (ConfigurableApplicationContext context =
          new SpringApplicationBuilder(Config.class)
              .web(WebApplicationType.NONE)
              .properties(
                  "postbox.transport=rabbitmq",
                  "postbox.rabbitmq.uri=amqp://guest:guest@127.0.0.1:1/%2F",
                  "postbox.relay.enabled=false",
                  "postbox.migrations.enabled=false")
              .run()) {
        context.getBean(PostboxPublisher.class);
        context.getBean("postboxHealthIndicator");
        return context.getBean(TransportWiring.class).getClass().getName();
      }
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class Config {
    @Bean
    DataSource dataSource() {
      return new DriverManagerDataSource("jdbc:postgresql://127.0.0.1:1/never-connected");
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void aRabbitMqApplicationStartsWithoutKafkaOnTheClassPath() throws Exception {
    String path =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<URL> urls = new ArrayList<>();
    int left = 0;
    for (String entry : path.split(File.pathSeparator)) {
      if (entry.contains("kafka")) { // kafka-clients, postbox-kafka's jar or classes
        left++;
        continue;
      }
      urls.add(new File(entry).toURI().toURL());
    }
    assertThat(left).as("Kafka entries left out of the class path").isPositive();
    ClassLoader before = Thread.currentThread().getContextClassLoader();
    try (URLClassLoader isolated =
        new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
      assertThat(isolated.getResource("org/apache/kafka/clients/producer/KafkaProducer.class"))
          .isNull();
      Thread.currentThread().setContextClassLoader(isolated);
      Class<?> app = Class.forName(App.class.getName(), true, isolated);
      String wiring = ((Supplier<String>) app.getDeclaredConstructor().newInstance()).get();
      assertThat(wiring).isEqualTo(RabbitWiring.class.getName());
    } finally {
      Thread.currentThread().setContextClassLoader(before);
    }
  }
}
