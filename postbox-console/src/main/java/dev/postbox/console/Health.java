package dev.postbox.console;

import java.util.Optional;

/**
 * What the console knows of its dependencies, for the banners of every page: the database always,
 * Kafka when the dashboard reads lag from it.
 */
public final class Health {

  private final Dependency database;
  private final Optional<Dependency> kafka;

  Health(Dependency database, Optional<Dependency> kafka) {
    this.database = database;
    this.kafka = kafka;
  }

  Dependency database() {
    return database;
  }

  Optional<Dependency> kafka() {
    return kafka;
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
