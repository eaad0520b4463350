package dev.postbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The settings every builder's Kafka client starts from. The metadata age is why a client leaves a
 * partition leader cut off from the other brokers within seconds, not Kafka's 5 minutes ({@code
 * KafkaClusterFailoverIT} cuts one off).
 */
class ClientSettingsTest {

  @Test
  void everyClientRefreshesItsMetadataEveryTenSecondsUnlessTheUserSaysOtherwise() {
    Map<String, Object> defaults = new ClientSettings("127.0.0.1:1").build(List.of(), Map.of(), "");
    assertThat(defaults)
        .containsEntry("bootstrap.servers", "127.0.0.1:1")
        .containsEntry("metadata.max.age.ms", 10_000);

    Map<String, Object> overridden =
        new ClientSettings("127.0.0.1:1")
            .put("metadata.max.age.ms", 60_000)
            .build(List.of(), Map.of(), "");
    assertThat(overridden).containsEntry("metadata.max.age.ms", 60_000);
  }
}
