package dev.postbox.core.consumer;

import dev.postbox.core.DeliveryGuarantee;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;

/** Reads a {@link Subscription.Builder} from properties: {@link Subscription#fromProperties}. */
final class SubscriptionProperties {

  private SubscriptionProperties() {}

  /** See {@link Subscription#fromProperties(String, Properties)}. */
  static Subscription.Builder read(String name, Properties properties) {
    Subscription.Builder b = Subscription.builder(name);
    String prefix = Subscription.PREFIX + name + ".";
    for (String key : properties.stringPropertyNames()) {
      if (!key.startsWith(prefix)) {
        continue;
      }
      String field = key.substring(prefix.length());
      String value = properties.getProperty(key).trim();
      try {
        switch (field) {
          case "topics" -> b.topics(splitList(value).toArray(String[]::new));
          case "guarantee" -> b.guarantee(enumValue(DeliveryGuarantee.class, value));
          case "ordering" -> b.ordering(enumValue(Ordering.class, value));
          case "concurrency" -> b.concurrency(Integer.parseInt(value));
          case "max-in-flight" -> b.maxInFlight(Integer.parseInt(value));
          case "batch-size" -> b.batchSize(Integer.parseInt(value));
          case "tenants" -> b.allowedTenants(Set.copyOf(splitList(value)));
          case "max-attempts" ->
              b.failureHandler(
                  FailureHandlers.of(
                      RetryPolicy.builder().maxAttempts(Integer.parseInt(value)).build()));
          case "inbox-retention" -> b.inboxRetention(Duration.parse(value));
          case "shutdown-timeout" -> b.shutdownTimeout(Duration.parse(value));
          case "idempotency-ttl" -> b.idempotencyTtl(Duration.parse(value));
          case "idempotency-lease" -> b.idempotencyLease(Duration.parse(value));
          default ->
              throw new IllegalArgumentException(
                  "unknown subscription property "
                      + key
                      + " (known: topics, guarantee, ordering,"
                      + " concurrency, max-in-flight, batch-size, tenants, max-attempts,"
                      + " inbox-retention, idempotency-ttl, idempotency-lease,"
                      + " shutdown-timeout)");
        }
      } catch (RuntimeException e) {
        if (e instanceof IllegalArgumentException
            && e.getMessage() != null
            && e.getMessage().startsWith("unknown subscription property")) {
          throw e;
        }
        throw new IllegalArgumentException("bad value for " + key + ": '" + value + "'", e);
      }
    }
    return b;
  }

  private static List<String> splitList(String value) {
    List<String> out = new ArrayList<>();
    for (String s : value.split(",")) {
      if (!s.isBlank()) {
        out.add(s.trim());
      }
    }
    return out;
  }

  private static <E extends Enum<E>> E enumValue(Class<E> type, String value) {
    return Enum.valueOf(type, value.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
  }
}
