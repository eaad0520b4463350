package dev.postbox.spring;

import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.BeanWrapper;
import org.springframework.beans.PropertyAccessorFactory;
import org.springframework.boot.context.properties.bind.AbstractBindHandler;
import org.springframework.boot.context.properties.bind.BindContext;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName.Form;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * Binds {@code postbox.*} into {@link PostboxProperties} and refuses the configuration with one
 * {@link PostboxConfigurationException} listing every problem: values that do not convert, keys
 * that no setting has (in the application's own property sources: configuration files, test
 * properties, command-line arguments; not the OS environment or JVM system properties, where other
 * tools keep {@code POSTBOX_*} variables), and the contradictions {@link DeliveryTableCheck} finds.
 */
final class PostboxSettingsBinder {

  private static final ConfigurationPropertyName ROOT =
      ConfigurationPropertyName.of(PostboxProperties.PREFIX);

  private PostboxSettingsBinder() {}

  /** The bound, checked settings. */
  static PostboxProperties bind(ConfigurableEnvironment environment) {
    List<String> problems = new ArrayList<>();
    PostboxProperties properties = new PostboxProperties();
    Binder.get(environment)
        .bind(
            PostboxProperties.PREFIX,
            Bindable.ofInstance(properties),
            new AbstractBindHandler() {
              @Override
              public Object onFailure(
                  ConfigurationPropertyName name,
                  Bindable<?> target,
                  BindContext context,
                  Exception error) {
                Object value =
                    context.getConfigurationProperty() == null
                        ? "?"
                        : context.getConfigurationProperty().getValue();
                problems.add(name + ": '" + value + "' is not a valid " + typeName(target));
                return null;
              }
            });
    if (properties.getKafka().getBootstrapServers().isBlank()) {
      properties
          .getKafka()
          .setBootstrapServers(KafkaClientSettings.springBootstrapServers(environment));
    }
    properties.getKafka().fromSpring(KafkaClientSettings.fromSpring(environment));
    if (properties.getTransport() == PostboxProperties.Transport.RABBITMQ) {
      RabbitClientSettings rabbit = RabbitClientSettings.fromSpring(environment);
      if (properties.getRabbitmq().getUri().isBlank()) {
        properties.getRabbitmq().setUri(rabbit.uri());
      } else {
        // postbox.rabbitmq.uri names the broker; spring.rabbitmq.ssl.* still applies
        rabbit = rabbit.withoutAddresses();
      }
      properties.getRabbitmq().fromSpring(rabbit);
      problems.addAll(rabbit.problems());
    }
    if (properties.isDependencyCheck()) {
      problems.addAll(
          DependencyVersions.problems(
              PostboxSettingsBinder.class.getClassLoader(), DependencyVersions.builtWith()));
    }
    problems.addAll(unknownKeys(environment, properties.getTransport()));
    problems.addAll(DeliveryTableCheck.problems(properties));
    if (!problems.isEmpty()) {
      throw new PostboxConfigurationException(problems);
    }
    return properties;
  }

  private static String typeName(Bindable<?> target) {
    Class<?> type = target.getType().resolve(Object.class);
    if (type.isEnum()) {
      return type.getSimpleName()
          + " (one of "
          + String.join(
              ", ",
              java.util.Arrays.stream(type.getEnumConstants())
                  .map(c ->
                      ((Enum<?>) c).name().toLowerCase(java.util.Locale.ROOT).replace('_', '-'))
                  .toList())
          + ")";
    }
    return type.getSimpleName();
  }

  /**
   * Keys under {@code postbox.} that name no setting, or a setting of the other transport than
   * {@code transport}.
   */
  static List<String> unknownKeys(
      ConfigurableEnvironment environment, PostboxProperties.Transport transport) {
    List<String> problems = new ArrayList<>();
    for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
      if (!(source instanceof IterableConfigurationPropertySource iterable)
          || isOutsideTheApplication(source.getUnderlyingSource())) {
        continue;
      }
      iterable.stream()
          .filter(ROOT::isAncestorOf)
          .forEach(name ->
              unknown(name).or(() -> otherTransports(name, transport)).ifPresent(problems::add));
    }
    return problems.stream().distinct().toList();
  }

  private static boolean isOutsideTheApplication(Object underlying) {
    if (underlying instanceof SystemEnvironmentPropertySource) {
      return true;
    }
    return underlying instanceof org.springframework.core.env.PropertySource<?> ps
        && StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME.equals(ps.getName());
  }

  /** A key of a transport other than {@code transport}, which it would silently ignore. */
  private static java.util.Optional<String> otherTransports(
      ConfigurationPropertyName name, PostboxProperties.Transport transport) {
    String section = name.getElement(1, Form.DASHED);
    if (transport == PostboxProperties.Transport.RABBITMQ && section.equals("kafka")) {
      return java.util.Optional.of(
          name
              + ": a Kafka setting, but postbox.transport is rabbitmq (remove it; the broker is"
              + " postbox.rabbitmq.uri)");
    }
    if (transport == PostboxProperties.Transport.KAFKA && section.equals("rabbitmq")) {
      return java.util.Optional.of(
          name
              + ": a RabbitMQ setting, but postbox.transport is kafka (set postbox.transport:"
              + " rabbitmq, or remove it)");
    }
    return java.util.Optional.empty();
  }

  private static java.util.Optional<String> unknown(ConfigurationPropertyName name) {
    int n = name.getNumberOfElements();
    String section = name.getElement(1, Form.DASHED);
    if (section.equals("topics")) {
      if (n < 4) {
        return java.util.Optional.of(
            name + ": a topic's entry needs settings (postbox.topics.<topic>.guarantee, ...)");
      }
      String topic = name.getElement(2, Form.ORIGINAL);
      String path = path(name, 3);
      if (writable(new TopicProperties(), path)) {
        return java.util.Optional.empty();
      }
      return java.util.Optional.of(
          name
              + ": unknown setting '"
              + dashed(name, 3)
              + "' of topic '"
              + topic
              + "' (known: guarantee, outbox, idempotency-ttl, inbox-retention, max-retries,"
              + " backoff.initial, backoff.max, backoff.multiplier, backoff.jitter, ordering,"
              + " concurrency, dead-letters, parking; write a topic name with dots in brackets:"
              + " postbox.topics[order.created].guarantee)");
    }
    if (section.equals("kafka") && n > 3 && name.getElement(2, Form.DASHED).equals("properties")) {
      return java.util.Optional.empty(); // any client property
    }
    if (section.equals("listeners")) {
      if (n == 4 && writable(new PostboxProperties.ListenerProperties(), path(name, 3))) {
        return java.util.Optional.empty();
      }
      return java.util.Optional.of(
          name + ": unknown listener setting (known: postbox.listeners.<listener id>.group)");
    }
    if (writable(new PostboxProperties(), path(name, 1))) {
      return java.util.Optional.empty();
    }
    return java.util.Optional.of(
        name
            + ": unknown key (see the configuration metadata or the README's Spring Boot section)");
  }

  private static boolean writable(Object bean, String path) {
    BeanWrapper wrapper = PropertyAccessorFactory.forBeanPropertyAccess(bean);
    wrapper.setAutoGrowNestedPaths(true);
    try {
      return wrapper.isWritableProperty(path);
    } catch (RuntimeException e) {
      return false;
    }
  }

  private static String dashed(ConfigurationPropertyName name, int from) {
    List<String> parts = new ArrayList<>();
    for (int i = from; i < name.getNumberOfElements(); i++) {
      parts.add(name.getElement(i, Form.DASHED));
    }
    return String.join(".", parts);
  }

  private static String path(ConfigurationPropertyName name, int from) {
    List<String> parts = new ArrayList<>();
    for (int i = from; i < name.getNumberOfElements(); i++) {
      parts.add(camel(name.getElement(i, Form.DASHED)));
    }
    return String.join(".", parts);
  }

  private static String camel(String dashed) {
    StringBuilder b = new StringBuilder();
    boolean up = false;
    for (char c : dashed.toCharArray()) {
      if (c == '-') {
        up = true;
      } else {
        b.append(up ? Character.toUpperCase(c) : c);
        up = false;
      }
    }
    return b.toString();
  }
}
