package dev.postbox.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.common.errors.AuthenticationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks at start that a secured Kafka configuration is accepted: one {@code describeCluster} with
 * the client's connection settings. Rejected credentials or a failed TLS handshake become a {@link
 * KafkaAccessDeniedException}; an unreachable cluster only logs a warning (the component starts and
 * retries, as without security). Plaintext configurations are not checked.
 */
final class AccessCheck {

  /** How long the check waits for the cluster. */
  static final Duration TIMEOUT = Duration.ofSeconds(15);

  private static final Logger log = LoggerFactory.getLogger(AccessCheck.class);

  private AccessCheck() {}

  /** Checks {@code clientConfig} for {@code component} (a name for the messages). */
  static void check(Map<String, Object> clientConfig, String component) {
    Object protocol = clientConfig.get("security.protocol");
    if (protocol == null || "PLAINTEXT".equalsIgnoreCase(protocol.toString())) {
      return;
    }
    Map<String, Object> adminConfig = new HashMap<>();
    clientConfig.forEach((k, v) -> {
      if (AdminClientConfig.configNames().contains(k)) {
        adminConfig.put(k, v);
      }
    });
    adminConfig.put(AdminClientConfig.CLIENT_ID_CONFIG, "postbox-access-check");
    adminConfig.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT.toMillis());
    adminConfig.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) TIMEOUT.toMillis());
    Object bootstrap = clientConfig.get("bootstrap.servers");
    try (Admin admin = Admin.create(adminConfig)) {
      admin
          .describeCluster(new DescribeClusterOptions().timeoutMs((int) TIMEOUT.toMillis()))
          .clusterId()
          .get(TIMEOUT.toMillis() + 1_000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof AuthenticationException refused) {
        throw new KafkaAccessDeniedException(
            component
                + ": the Kafka cluster at "
                + bootstrap
                + " refused the "
                + protocol
                + " connection ("
                + refused.getClass().getSimpleName()
                + ": "
                + refused.getMessage()
                + "); check the user, the password, the mechanism and the trust store",
            refused);
      }
      log.warn(
          "{}: could not check the {} connection to {} ({}); starting anyway, will retry",
          component,
          protocol,
          bootstrap,
          e.getCause().toString());
    } catch (TimeoutException e) {
      log.warn(
          "{}: the Kafka cluster at {} did not answer within {} s; starting anyway, will retry",
          component,
          bootstrap,
          TIMEOUT.toSeconds());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // the caller's start goes on and sees the flag
    }
  }
}
