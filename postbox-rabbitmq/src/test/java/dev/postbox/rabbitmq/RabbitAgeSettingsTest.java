package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.ConsumerAgeStore;
import java.lang.reflect.Proxy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * What the builders accept and refuse for the reported ages: {@link
 * RabbitSubscriber.Builder#ageReportInterval} only with an age store, at least 100 ms; {@link
 * RabbitLagProbe.Builder#ageStaleAfter} only with one, positive; each refusal names the option.
 * Nothing connects: {@code build()} only validates.
 */
class RabbitAgeSettingsTest {

  private static final String URI = "amqp://guest:guest@localhost:5672/%2F";
  private static final Subscription SUB = Subscription.builder("age-settings").topics("t").build();

  /** A store no test here calls: {@code build()} connects to nothing. */
  private static ConsumerAgeStore unused() {
    return (ConsumerAgeStore)
        Proxy.newProxyInstance(
            ConsumerAgeStore.class.getClassLoader(),
            new Class<?>[] {ConsumerAgeStore.class},
            (p, m, a) -> {
              throw new UnsupportedOperationException(m.getName());
            });
  }

  @Test
  void theSubscribersReportIntervalNeedsAStoreAndAtLeast100Ms() {
    assertThatThrownBy(() ->
            RabbitSubscriber.builder(URI, SUB)
                .handler(d -> {})
                .ageReportInterval(Duration.ofSeconds(1))
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("age-settings")
        .hasMessageContaining("ageReportInterval is set but there is no ageStore");
    assertThatThrownBy(() ->
            RabbitSubscriber.builder(URI, SUB)
                .handler(d -> {})
                .ageStore(unused())
                .ageReportInterval(Duration.ofMillis(50))
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ageReportInterval must be at least 100 ms, was PT0.05S");
    assertThatCode(
            () -> RabbitSubscriber.builder(URI, SUB).handler(d -> {}).ageStore(unused()).build())
        .doesNotThrowAnyException();
  }

  @Test
  void theProbesStalenessBoundNeedsAStoreAndMustBePositive() {
    assertThatThrownBy(() ->
            RabbitLagProbe.builder(URI)
                .subscription("s", 1, "t")
                .ageStaleAfter(Duration.ofSeconds(10))
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ageStaleAfter is set but there is no ages store");
    assertThatThrownBy(() ->
            RabbitLagProbe.builder(URI)
                .subscription("s", 1, "t")
                .ages(unused())
                .ageStaleAfter(Duration.ZERO)
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ageStaleAfter must be positive, was PT0S");
    assertThatCode(() ->
            RabbitLagProbe.builder(URI).subscription("s", 1, "t").ages(unused()).build().close())
        .doesNotThrowAnyException();
  }
}
