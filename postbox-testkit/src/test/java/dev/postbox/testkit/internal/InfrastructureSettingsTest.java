package dev.postbox.testkit.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class InfrastructureSettingsTest {

  @Test
  void embeddedByDefault() {
    InfrastructureSettings s = InfrastructureSettings.fromEnvironment(Map.of());
    assertThat(s.kafkaBootstrap()).isEmpty();
    assertThat(s.externalPostgres()).isEmpty();
  }

  @Test
  void blankValuesCountAsUnset() {
    InfrastructureSettings s =
        InfrastructureSettings.fromEnvironment(
            Map.of("POSTBOX_KAFKA_BOOTSTRAP", "  ", "POSTBOX_PG_URL", ""));
    assertThat(s.kafkaBootstrap()).isEmpty();
    assertThat(s.externalPostgres()).isEmpty();
  }

  @Test
  void externalServersFromTheEnvironment() {
    InfrastructureSettings s =
        InfrastructureSettings.fromEnvironment(
            Map.of(
                "POSTBOX_KAFKA_BOOTSTRAP", " k1:9092,k2:9092 ",
                "POSTBOX_PG_URL", "jdbc:postgresql://db:5432/test",
                "POSTBOX_PG_USER", "app"));
    assertThat(s.kafkaBootstrap()).contains("k1:9092,k2:9092");
    assertThat(s.externalPostgres())
        .contains(
            new InfrastructureSettings.ExternalPostgres(
                "jdbc:postgresql://db:5432/test", Optional.of("app"), Optional.empty()));
  }

  @Test
  void eachServerIsSelectedOnItsOwn() {
    InfrastructureSettings s =
        InfrastructureSettings.fromEnvironment(Map.of("POSTBOX_PG_URL", "jdbc:postgresql://x/y"));
    assertThat(s.kafkaBootstrap()).isEmpty();
    assertThat(s.externalPostgres()).isPresent();
  }
}
