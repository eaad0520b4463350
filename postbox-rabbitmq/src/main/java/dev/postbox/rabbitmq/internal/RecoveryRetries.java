package dev.postbox.rabbitmq.internal;

import com.rabbitmq.client.ShutdownSignalException;
import com.rabbitmq.client.impl.recovery.RetryHandler;
import com.rabbitmq.client.impl.recovery.TopologyRecoveryRetryHandlerBuilder;
import com.rabbitmq.client.impl.recovery.TopologyRecoveryRetryLogic;
import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * How the client's topology recovery retries a queue, binding or consumer: for as long as the
 * subscriber runs, waiting {@code first} doubled after each failure up to {@code cap}. After a
 * broker restart a quorum queue refuses {@code basic.consume} until it has a leader, and a consumer
 * whose recovery gave up would stay gone (the shard unconsumed). An error that closed the whole
 * connection is not retried here: the connection's own recovery starts over. Stateless.
 */
public final class RecoveryRetries {

  private RecoveryRetries() {}

  /** The retry handler: retries while {@code running}, sleeping with {@code sleeper}. */
  public static RetryHandler handler(
      Duration first, Duration cap, Sleeper sleeper, BooleanSupplier running) {
    return TopologyRecoveryRetryHandlerBuilder.builder()
        .queueRecoveryRetryCondition((q, e) -> retry(e, running))
        .queueRecoveryRetryOperation(
            TopologyRecoveryRetryLogic.RECOVER_CHANNEL.andThen(
                TopologyRecoveryRetryLogic.RECOVER_QUEUE))
        .bindingRecoveryRetryCondition((b, e) -> retry(e, running))
        .bindingRecoveryRetryOperation(
            TopologyRecoveryRetryLogic.RECOVER_CHANNEL.andThen(
                TopologyRecoveryRetryLogic.RECOVER_BINDING))
        .consumerRecoveryRetryCondition((c, e) -> retry(e, running))
        .consumerRecoveryRetryOperation(
            TopologyRecoveryRetryLogic.RECOVER_CHANNEL.andThen(
                TopologyRecoveryRetryLogic.RECOVER_CONSUMER))
        .retryAttempts(Integer.MAX_VALUE)
        .backoffPolicy(attempt -> {
          if (!running.getAsBoolean()) {
            throw new IllegalStateException("subscriber closed: recovery stopped");
          }
          sleeper.sleep(backoff(first, cap, attempt));
        })
        .build();
  }

  /**
   * The wait before retry {@code attempt} (1, 2, ...): {@code first} doubled, at most {@code cap}.
   */
  public static Duration backoff(Duration first, Duration cap, int attempt) {
    int doublings = Math.min(Math.max(attempt - 1, 0), 20);
    Duration d = first.multipliedBy(1L << doublings);
    return d.compareTo(cap) > 0 ? cap : d;
  }

  /** Whether a failed recovery step is retried: while running, unless the connection is gone. */
  static boolean retry(Exception e, BooleanSupplier running) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ShutdownSignalException s && s.isHardError()) {
        return false;
      }
    }
    return running.getAsBoolean();
  }
}
