package dev.postbox.console;

import java.util.Optional;

/**
 * What the console knows of its dependencies, for the banners of every page: the database always,
 * Kafka and RabbitMQ when the dashboard reads lag from them.
 */
public final class Health {

  private final Dependency database;
  private final Optional<Dependency> kafka;
  private final Optional<Dependency> rabbitmq;

  Health(Dependency database, Optional<Dependency> kafka) {
    this(database, kafka, Optional.empty());
  }

  Health(Dependency database, Optional<Dependency> kafka, Optional<Dependency> rabbitmq) {
    this.database = database;
    this.kafka = kafka;
    this.rabbitmq = rabbitmq;
  }

  Dependency database() {
    return database;
  }

  Optional<Dependency> kafka() {
    return kafka;
  }

  Optional<Dependency> rabbitmq() {
    return rabbitmq;
  }

  /** Whether RabbitMQ is configured (the dashboard lists its queues). */
  public boolean isRabbitmqConfigured() {
    return rabbitmq.isPresent();
  }

  /** Whether RabbitMQ is configured and known to be unreachable. */
  public boolean isRabbitmqDown() {
    return rabbitmq.map(Dependency::isDown).orElse(false);
  }

  /** Since when RabbitMQ is unreachable (empty text while it answers or is not configured). */
  public String getRabbitmqDownSince() {
    return rabbitmq.flatMap(Dependency::downSince).map(Fmt::formatAt).orElse("");
  }

  /** Whether the database is known to be unreachable. */
  public boolean isDatabaseDown() {
    return database.isDown();
  }

  /** Whether Kafka is configured and known to be unreachable. */
  public boolean isKafkaDown() {
    return kafka.map(Dependency::isDown).orElse(false);
  }

  /** Since when the database is unreachable (empty text while it answers). */
  public String getDatabaseDownSince() {
    return database.downSince().map(Fmt::formatAt).orElse("");
  }

  /** Since when Kafka is unreachable (empty text while it answers or is not configured). */
  public String getKafkaDownSince() {
    return kafka.flatMap(Dependency::downSince).map(Fmt::formatAt).orElse("");
  }
}
