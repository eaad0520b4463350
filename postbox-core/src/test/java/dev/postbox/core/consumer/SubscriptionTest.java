package dev.postbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.DeliveryGuarantee;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A {@link Subscription} exists only after its builder's checks: there is no other way in. */
class SubscriptionTest {

  @Test
  void thereIsNoConstructorOutsideTheBuilder() {
    assertThat(Subscription.class.isRecord()).isFalse();
    assertThat(Modifier.isFinal(Subscription.class.getModifiers())).isTrue();
    assertThat(Subscription.class.getConstructors()).isEmpty();
    assertThat(Subscription.class.getDeclaredConstructors())
        .allSatisfy(c -> assertThat(Modifier.isPrivate(c.getModifiers())).isTrue());
    // and no static factory hands one out unchecked: builder and fromProperties return builders
    assertThat(
            Arrays.stream(Subscription.class.getMethods())
                .filter(m -> Modifier.isStatic(m.getModifiers()))
                .filter(m -> m.getReturnType() == Subscription.class))
        .isEmpty();
  }

  @Test
  void theBuildersChecksRejectWhatTheRecordUsedToAccept() {
    assertThatThrownBy(() -> Subscription.builder("orders").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one topic");
    assertThatThrownBy(() ->
            Subscription.builder("orders")
                .topics("t")
                .guarantee(DeliveryGuarantee.DEDUPLICATED)
                .batchSize(10)
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batchSize must be 1");
    assertThatThrownBy(() ->
            Subscription.builder("orders")
                .topics("t")
                .idempotencyTtl(Duration.ofSeconds(30))
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyTtl");
  }

  @Test
  void theAccessorsReturnTheDefaultsAndEqualSettingsAreEqual() {
    Subscription s = Subscription.builder("orders").topics("a", "b").build();
    assertThat(s.name()).isEqualTo("orders");
    assertThat(s.topics()).containsExactly("a", "b");
    assertThat(s.guarantee()).isEqualTo(Subscription.DEFAULT_GUARANTEE);
    assertThat(s.ordering()).isEqualTo(Subscription.DEFAULT_ORDERING);
    assertThat(s.concurrency()).isEqualTo(Subscription.DEFAULT_CONCURRENCY);
    assertThat(s.maxInFlight()).isEqualTo(Subscription.DEFAULT_MAX_IN_FLIGHT);
    assertThat(s.batchSize()).isEqualTo(Subscription.DEFAULT_BATCH_SIZE);
    assertThat(s.allowedTenants()).isEmpty();
    assertThat(s.eventTypes()).isEmpty();
    assertThat(s.inboxRetention()).isEqualTo(Subscription.DEFAULT_INBOX_RETENTION);
    assertThat(s.shutdownTimeout()).isEqualTo(Subscription.DEFAULT_SHUTDOWN_TIMEOUT);
    assertThat(s.idempotencyTtl()).isEqualTo(Subscription.DEFAULT_IDEMPOTENCY_TTL);
    assertThat(s.idempotencyLease()).isEqualTo(Subscription.DEFAULT_IDEMPOTENCY_LEASE);
    assertThat(s.toString()).contains("name=orders", "topics=[a, b]");

    FailureHandler handler = s.failureHandler();
    Subscription same =
        Subscription.builder("orders").topics("a", "b").failureHandler(handler).build();
    assertThat(same).isEqualTo(s).hasSameHashCodeAs(s);
    assertThat(
            Subscription.builder("orders")
                .topics("a", "b")
                .failureHandler(handler)
                .allowedTenants(Set.of("acme"))
                .build())
        .isNotEqualTo(s);
  }
}
