package dev.postbox.kafka;

import dev.postbox.core.PostboxException;

/**
 * The Kafka cluster refused this client's connection at start: its SASL credentials were rejected
 * or the TLS handshake failed (the broker's certificate is not trusted, its name does not match, or
 * the listener does not speak the configured protocol). Retrying cannot fix it: change the
 * configuration. An unreachable cluster is not this error (the component starts and retries).
 */
public class KafkaAccessDeniedException extends PostboxException {
  public KafkaAccessDeniedException(String message, Throwable cause) {
    super(message, cause);
  }
}
