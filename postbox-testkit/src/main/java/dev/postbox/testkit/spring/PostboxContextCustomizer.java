package dev.postbox.testkit.spring;

import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.errors.TopicExistsException;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.MergedContextConfiguration;

/**
 * Puts a {@link PostboxSpringBootTest}'s application on the test kit: once Spring Boot has read the
 * application's configuration (this runs as an initializer of the context), a test kit context
 * gives the schema and the broker as the first property source, the delivery table's topics are
 * created, and the test kit context becomes a bean destroyed after the application's lifecycle
 * stopped (it was registered first, so it is destroyed last).
 *
 * @param schema the schema's name
 * @param topics further topics to create
 * @param partitions the partitions of each created topic
 */
record PostboxContextCustomizer(String schema, List<String> topics, int partitions)
    implements ContextCustomizer {

  /** The property source's name. */
  static final String PROPERTY_SOURCE = "postbox-testkit";

  private static final ConfigurationPropertyName TABLE =
      ConfigurationPropertyName.of("postbox.topics");

  @Override
  public void customizeContext(
      ConfigurableApplicationContext context, MergedContextConfiguration config) {
    ConfigurableEnvironment env = context.getEnvironment();
    PostboxTestContext kit = PostboxTestContext.create(schema);
    Map<String, Object> settings = new LinkedHashMap<>();
    settings.put("spring.datasource.url", kit.jdbcUrl());
    boolean rabbit = "rabbitmq".equalsIgnoreCase(env.getProperty("postbox.transport", "kafka"));
    if (rabbit) {
      settings.put("postbox.rabbitmq.uri", RabbitMqServer.sharedOrSkip().uri());
    } else {
      settings.put("postbox.kafka.bootstrap-servers", kit.bootstrapServers());
      Set<String> all = new LinkedHashSet<>(tableTopics(env));
      all.addAll(topics);
      for (String topic : all) {
        create(kit, topic);
      }
    }
    env.getPropertySources().addFirst(new MapPropertySource(PROPERTY_SOURCE, settings));
    if (context.getBeanFactory() instanceof DefaultListableBeanFactory beans) {
      beans.registerSingleton("postboxTestContext", kit);
      beans.registerDisposableBean("postboxTestContext", kit::close);
    } else {
      context.getBeanFactory().registerSingleton("postboxTestContext", kit);
    }
  }

  /** The topics the delivery table names ({@code postbox.topics[<topic>].*}). */
  static Set<String> tableTopics(ConfigurableEnvironment env) {
    Set<String> out = new LinkedHashSet<>();
    for (ConfigurationPropertySource source : ConfigurationPropertySources.get(env)) {
      if (source instanceof IterableConfigurationPropertySource names) {
        names.stream()
            .filter(n -> TABLE.isAncestorOf(n) && n.getNumberOfElements() > 2)
            .forEach(n -> out.add(n.getElement(2, ConfigurationPropertyName.Form.ORIGINAL)));
      }
    }
    return out;
  }

  private void create(PostboxTestContext kit, String topic) {
    try {
      kit.kafka().createTopic(topic, partitions);
    } catch (RuntimeException e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t instanceof TopicExistsException) {
          return; // an earlier test's: kept
        }
      }
      throw e;
    }
  }
}
