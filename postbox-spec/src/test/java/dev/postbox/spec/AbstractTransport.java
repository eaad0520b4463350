package dev.postbox.spec;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.SubscriberBuilder;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.redis.RedisIdempotencyStore;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/** What both transports share: the test schema's stores, the relay, closing what was started. */
abstract class AbstractTransport implements Transport {

  protected final DataSource dataSource;
  protected final DataSource consumerDataSource;
  protected final DeadLetterStore deadLetters;
  private final List<AutoCloseable> open = new ArrayList<>();

  AbstractTransport(PostboxTestContext ctx) {
    this.dataSource = ctx.dataSource();
    // the subscribers' own pool: EFFECTIVELY_ONCE handlers hold an inbox transaction each
    this.consumerDataSource = ctx.newDataSource(24);
    this.deadLetters = PostgresDeadLetterStore.create(dataSource);
  }

  /** A new publisher of this transport for a relay or a direct publish. */
  protected abstract RelayPublisher newPublisher();

  /**
   * Gives {@code builder} the stores of {@code subscription}'s guarantee: the test schema's
   * dead-letter store always, its PostgreSQL inbox for {@code EFFECTIVELY_ONCE}, and for {@code
   * DEDUPLICATED} an idempotency store on the test kit's shared Redis (a test of that guarantee is
   * skipped, with one line, where Redis is missing outside CI). Call it before the subscriber is
   * remembered: the Redis store is then closed after it.
   */
  protected <B extends SubscriberBuilder<B>> B stores(B builder, Subscription subscription) {
    builder.deadLetters(deadLetters);
    if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
      builder.inbox(PostgresInboxStore.create(consumerDataSource));
    }
    if (subscription.guarantee() == DeliveryGuarantee.DEDUPLICATED) {
      // keys are <subscription>:<message id>, and each test has its own subscription
      builder.idempotencyStore(
          remember(RedisIdempotencyStore.builder(RedisServer.sharedOrSkip().uri()).build()));
    }
    return builder;
  }

  @Override
  public DeadLetterStore deadLetters() {
    return deadLetters;
  }

  @Override
  public Relay relay() {
    Relay r =
        Relay.builder(PostgresRelayStore.create(dataSource), newPublisher())
            .instanceId(name() + "-relay-" + UUID.randomUUID())
            .batchSize(100)
            .leaseTtl(Duration.ofSeconds(2))
            .pollInterval(Duration.ofMillis(100))
            .backoff(new Backoff(Duration.ofMillis(50), Duration.ofSeconds(1), 2, 0.5))
            .build();
    r.start();
    return remember(r);
  }

  @Override
  public void publishDirectly(List<dev.postbox.core.Message> messages) throws Exception {
    try (RelayPublisher p = newPublisher()) {
      List<RelayPublisher.PublishOutcome> outcomes = p.publish(messages);
      for (RelayPublisher.PublishOutcome o : outcomes) {
        if (!(o instanceof RelayPublisher.PublishOutcome.Acknowledged)) {
          throw new AssertionError(name() + " did not acknowledge a publish: " + o);
        }
      }
    }
  }

  protected <T extends AutoCloseable> T remember(T closeable) {
    synchronized (open) {
      open.add(closeable);
    }
    return closeable;
  }

  @Override
  public void close() {
    List<AutoCloseable> all;
    synchronized (open) {
      all = new ArrayList<>(open);
      open.clear();
    }
    RuntimeException failure = null;
    for (int i = all.size() - 1; i >= 0; i--) {
      try {
        all.get(i).close();
      } catch (Exception e) {
        if (failure == null) {
          failure = new IllegalStateException("closing " + all.get(i) + " failed", e);
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }
}
