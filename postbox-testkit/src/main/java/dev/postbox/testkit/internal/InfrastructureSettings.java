package dev.postbox.testkit.internal;

import java.util.Map;
import java.util.Optional;

/**
 * Which servers {@link dev.postbox.testkit.PostboxInfrastructure} uses, read from the environment:
 * {@value #KAFKA_BOOTSTRAP} selects an external Kafka broker, {@value #PG_URL} (with optional
 * {@value #PG_USER} and {@value #PG_PASSWORD}) an external PostgreSQL server; otherwise the
 * embedded ones. Blank values count as unset.
 */
public record InfrastructureSettings(
    Optional<String> kafkaBootstrap, Optional<ExternalPostgres> externalPostgres) {

  public static final String KAFKA_BOOTSTRAP = "POSTBOX_KAFKA_BOOTSTRAP";
  public static final String PG_URL = "POSTBOX_PG_URL";
  public static final String PG_USER = "POSTBOX_PG_USER";
  public static final String PG_PASSWORD = "POSTBOX_PG_PASSWORD";

  /** An external PostgreSQL server. */
  public record ExternalPostgres(String url, Optional<String> user, Optional<String> password) {}

  /** The settings that {@code env} selects. */
  public static InfrastructureSettings fromEnvironment(Map<String, String> env) {
    return new InfrastructureSettings(
        value(env, KAFKA_BOOTSTRAP),
        value(env, PG_URL)
            .map(url -> new ExternalPostgres(url, value(env, PG_USER), value(env, PG_PASSWORD))));
  }

  private static Optional<String> value(Map<String, String> env, String name) {
    return Optional.ofNullable(env.get(name)).map(String::trim).filter(s -> !s.isEmpty());
  }
}
