package dev.postbox.testkit.internal;

import dev.postbox.testkit.KafkaBroker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/** A broker that runs elsewhere: usable, not controllable. Thread-safe. */
public final class ExternalKafkaBroker implements KafkaBroker {

  private final String bootstrapServers;
  private final TopicAdmin admin;

  public ExternalKafkaBroker(String bootstrapServers) {
    if (Objects.requireNonNull(bootstrapServers, "bootstrapServers").isBlank()) {
      throw new IllegalArgumentException("bootstrapServers must not be blank");
    }
    this.bootstrapServers = bootstrapServers.trim();
    this.admin = new TopicAdmin(this.bootstrapServers);
  }

  @Override
  public String bootstrapServers() {
    return bootstrapServers;
  }

  @Override
  public boolean isExternal() {
    return true;
  }

  @Override
  public void start() {}

  @Override
  public void stop() {
    throw unsupported("stop");
  }

  @Override
  public void kill() {
    throw unsupported("kill");
  }

  @Override
  public void restart() {
    throw unsupported("restart");
  }

  @Override
  public void pause() {
    throw unsupported("pause");
  }

  @Override
  public void resume() {
    throw unsupported("resume");
  }

  @Override
  public boolean isRunning() {
    return true;
  }

  @Override
  public boolean isPaused() {
    return false;
  }

  @Override
  public void createTopic(String name, int partitions) {
    createTopic(name, partitions, Map.of());
  }

  @Override
  public void createTopic(String name, int partitions, Map<String, String> config) {
    admin.createTopic(name, partitions, config);
  }

  @Override
  public Optional<Path> dataDirectory() {
    return Optional.empty();
  }

  @Override
  public Optional<Path> log() {
    return Optional.empty();
  }

  @Override
  public Optional<Duration> lastStartupTime() {
    return Optional.empty();
  }

  @Override
  public void close() {
    admin.close();
  }

  @Override
  public String toString() {
    return "KafkaBroker[external " + bootstrapServers + "]";
  }

  private UnsupportedOperationException unsupported(String operation) {
    return new UnsupportedOperationException(
        "Cannot "
            + operation
            + " the external Kafka broker at "
            + bootstrapServers
            + " (POSTBOX_KAFKA_BOOTSTRAP is set): only an embedded broker can be killed,"
            + " stopped, restarted or paused. Unset POSTBOX_KAFKA_BOOTSTRAP to run this test.");
  }
}
