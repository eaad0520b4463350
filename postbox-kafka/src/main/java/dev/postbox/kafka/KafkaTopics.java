package dev.postbox.kafka;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;

/** Look-ups of topic settings through the Kafka admin client. Thread-safe (stateless). */
public final class KafkaTopics {

  private KafkaTopics() {}

  /**
   * The {@code retention.ms} of each topic ({@code -1} = forever), read with an admin client built
   * from the connection settings in {@code clientConfig} (bootstrap servers, security).
   */
  public static Map<String, Long> retentionMillis(
      Map<String, Object> clientConfig, Collection<String> topics) {
    Map<String, Object> adminConfig = new HashMap<>();
    clientConfig.forEach((k, v) -> {
      if (AdminClientConfig.configNames().contains(k)
          && !k.equals(ConsumerConfig.CLIENT_ID_CONFIG)) {
        adminConfig.put(k, v);
      }
    });
    List<ConfigResource> resources = new ArrayList<>();
    for (String t : topics) {
      resources.add(new ConfigResource(ConfigResource.Type.TOPIC, t));
    }
    try (Admin admin = Admin.create(adminConfig)) {
      Map<ConfigResource, Config> configs =
          admin.describeConfigs(resources).all().get(30, TimeUnit.SECONDS);
      Map<String, Long> out = new HashMap<>();
      configs.forEach((r, c) ->
          out.put(r.name(), Long.parseLong(c.get(TopicConfig.RETENTION_MS_CONFIG).value())));
      return out;
    } catch (TimeoutException e) {
      throw new IllegalStateException(
          "no answer from the Kafka cluster ("
              + AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG
              + "="
              + adminConfig.get(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG)
              + ") within 30 s while reading retention.ms of "
              + topics
              + ": is it running and reachable from here?",
          e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException) {
        throw new IllegalStateException(
            "cannot read retention.ms of " + topics + ": a topic does not exist (create it first)",
            e);
      }
      throw new IllegalStateException(
          "cannot read retention.ms of " + topics + ": " + e.getCause(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while reading retention.ms of " + topics, e);
    }
  }
}
