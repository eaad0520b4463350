package dev.postbox.rabbitmq.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ShutdownSignalException;
import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The consumer recovery's backoff and which failures it retries, without a broker. */
class RecoveryRetriesTest {

  @Test
  void backoffDoublesUpToTheCap() {
    Duration first = Duration.ofSeconds(1);
    Duration cap = Duration.ofSeconds(30);
    assertThat(RecoveryRetries.backoff(first, cap, 1)).isEqualTo(Duration.ofSeconds(1));
    assertThat(RecoveryRetries.backoff(first, cap, 2)).isEqualTo(Duration.ofSeconds(2));
    assertThat(RecoveryRetries.backoff(first, cap, 5)).isEqualTo(Duration.ofSeconds(16));
    assertThat(RecoveryRetries.backoff(first, cap, 6)).isEqualTo(cap);
    assertThat(RecoveryRetries.backoff(first, cap, Integer.MAX_VALUE)).isEqualTo(cap);
  }

  @Test
  void aChannelErrorIsRetriedWhileRunningAConnectionErrorIsLeftToTheConnectionRecovery() {
    ShutdownSignalException channel =
        new ShutdownSignalException(false, false, new AMQP.Channel.Close.Builder().build(), null);
    ShutdownSignalException connection =
        new ShutdownSignalException(true, false, new AMQP.Connection.Close.Builder().build(), null);
    assertThat(RecoveryRetries.retry(new IOException(channel), () -> true)).isTrue();
    assertThat(RecoveryRetries.retry(new IOException(channel), () -> false)).isFalse();
    assertThat(RecoveryRetries.retry(new IOException(connection), () -> true)).isFalse();
  }
}
