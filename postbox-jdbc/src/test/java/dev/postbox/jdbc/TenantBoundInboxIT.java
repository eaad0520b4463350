package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.engine.TransportBinding;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import io.opentelemetry.api.OpenTelemetry;
import java.time.Clock;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The inbox key is bound to the tenant: a message id first seen from tenant A never suppresses
 * tenant B's message with the same id (nor a message without a tenant), while a true redelivery
 * within one tenant is still suppressed; one at a time and in a batch, on PostgreSQL through the
 * consumer engine.
 */
@PostboxTest
class TenantBoundInboxIT {

  private static final TransportBinding TRANSPORT =
      new TransportBinding("test-bus", "messaging.test-bus.offset", t -> false);

  private final List<String> applied = new CopyOnWriteArrayList<>();
  private final AtomicLong offsets = new AtomicLong();

  private DeliveryProcessor processor(DataSource ds, boolean batch) {
    DeliveryProcessor.Builder b =
        DeliveryProcessor.builder(
                TRANSPORT,
                Subscription.builder("billing")
                    .topics("payments")
                    .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                    .batchSize(batch ? 10 : 1)
                    .build())
            .inbox(Optional.of(PostgresInboxStore.create(ds)))
            .time(Clock.systemUTC(), Ticker.SYSTEM, Sleeper.SYSTEM)
            .metrics(PostboxMetrics.noop())
            .openTelemetry(OpenTelemetry.noop());
    return batch
        ? b.batchHandler(ds2 -> ds2.forEach(d -> applied.add(d.message().tenant().orElse("-"))))
            .build()
        : b.handler(d -> applied.add(d.message().tenant().orElse("-"))).build();
  }

  private Incoming incoming(Message m) {
    return new Incoming(
        "payments", 0, offsets.incrementAndGet(), () -> m, null, m.payload().bytes(), List.of());
  }

  private static Message of(UUID id, String tenant) {
    return Message.builder("payments", "payment.received")
        .id(id)
        .tenant(tenant)
        .jsonPayload("{\"amount\":1}")
        .build();
  }

  @Test
  void anIdFromOneTenantNeverSuppressesAnotherTenantsMessage(PostboxTestContext ctx) {
    PostboxMigrations.migrate(ctx.dataSource());
    DeliveryProcessor p = processor(ctx.dataSource(), false);
    UUID id = UUID.randomUUID();

    assertThat(p.process(incoming(of(id, "tenant-a")), () -> true)).isTrue();
    assertThat(p.process(incoming(of(id, "tenant-b")), () -> true)).isTrue();
    assertThat(p.process(incoming(of(id, null)), () -> true)).isTrue();
    assertThat(p.process(incoming(of(id, "tenant-a")), () -> true)).isTrue(); // a redelivery

    assertThat(applied).containsExactly("tenant-a", "tenant-b", "-");
    assertThat(p.stats().duplicatesSuppressed()).isEqualTo(1);
    assertThat(p.stats().deadLettered()).isZero();
  }

  @Test
  void alsoInABatch(PostboxTestContext ctx) {
    PostboxMigrations.migrate(ctx.dataSource());
    DeliveryProcessor p = processor(ctx.dataSource(), true);
    UUID id = UUID.randomUUID();

    assertThat(p.processBatch(List.of(incoming(of(id, "tenant-a"))), () -> true)).isTrue();
    assertThat(
            p.processBatch(
                List.of(incoming(of(id, "tenant-b")), incoming(of(id, "tenant-a"))), () -> true))
        .isTrue();

    assertThat(applied).containsExactly("tenant-a", "tenant-b");
    assertThat(p.stats().duplicatesSuppressed()).isEqualTo(1);
  }
}
