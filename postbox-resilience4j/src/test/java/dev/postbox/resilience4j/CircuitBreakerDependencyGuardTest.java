package dev.postbox.resilience4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.codec.Decoded;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.DependencyGuard;
import dev.postbox.core.consumer.DependencyUnavailableException;
import dev.postbox.core.consumer.FailureDecision.Retry;
import dev.postbox.core.consumer.FailureHandler;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.time.FakeTime;
import java.io.IOException;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The Resilience4j guard behind {@link DependencyGuard#builder()} (moved from core with the guard),
 * found through the module's service file, on fake time.
 */
class CircuitBreakerDependencyGuardTest {

  private final FakeTime time = FakeTime.create();
  private final Clock clock = time.clock();
  private final AtomicInteger calls = new AtomicInteger();

  private DependencyGuard guard() {
    return DependencyGuard.builder()
        .minimumCalls(4)
        .slidingWindowCalls(4)
        .failureRateThreshold(50)
        .waitInOpenState(Duration.ofSeconds(30))
        .clock(clock)
        .build();
  }

  private String failing() throws IOException {
    calls.incrementAndGet();
    throw new IOException("connection refused");
  }

  private String succeeding() {
    calls.incrementAndGet();
    return "ok";
  }

  private void openIt(DependencyGuard g) {
    for (int i = 0; i < 4; i++) {
      assertThatThrownBy(() -> g.call("payments", this::failing)).isInstanceOf(IOException.class);
    }
    assertThat(g.state("payments")).isEqualTo(DependencyGuard.State.OPEN);
  }

  @Test
  void opensAfterFailuresFailsFastWithTheWaitAndClosesAfterASuccessfulProbe() throws Exception {
    DependencyGuard g = guard();
    assertThat(g.state("payments")).isEqualTo(DependencyGuard.State.CLOSED);
    openIt(g);
    calls.set(0);
    assertThatThrownBy(() -> g.call("payments", this::succeeding))
        .isInstanceOfSatisfying(
            DependencyUnavailableException.class,
            e -> {
              assertThat(e.dependency()).isEqualTo("payments");
              // Resilience4j lets the probe through strictly after the wait: 1 ms is added
              assertThat(e.retryAfter()).isEqualTo(Duration.ofMillis(30_001));
            });
    time.advance(Duration.ofSeconds(10));
    assertThatThrownBy(() -> g.call("payments", this::succeeding))
        .isInstanceOfSatisfying(
            DependencyUnavailableException.class,
            e -> assertThat(e.retryAfter()).isEqualTo(Duration.ofMillis(20_001)));
    assertThat(calls).hasValue(0);
    // other dependencies are unaffected
    assertThat(g.call("inventory", this::succeeding)).isEqualTo("ok");
    time.advance(Duration.ofMillis(20_001));
    assertThat(g.call("payments", this::succeeding)).isEqualTo("ok"); // the probe
    assertThat(g.state("payments")).isEqualTo(DependencyGuard.State.CLOSED);
    assertThat(g.call("payments", this::succeeding)).isEqualTo("ok");
  }

  @Test
  void aFailedProbeOpensTheBreakerAgain() {
    DependencyGuard g = guard();
    openIt(g);
    time.advance(Duration.ofMillis(30_001));
    assertThatThrownBy(() -> g.call("payments", this::failing)).isInstanceOf(IOException.class);
    assertThat(g.state("payments")).isEqualTo(DependencyGuard.State.OPEN);
    assertThatThrownBy(() -> g.call("payments", this::succeeding))
        .isInstanceOfSatisfying(
            DependencyUnavailableException.class,
            e -> assertThat(e.retryAfter()).isEqualTo(Duration.ofMillis(30_001)));
  }

  @Test
  void permanentMessageFailuresAreNotTheDependencysFault() {
    DependencyGuard g = guard();
    for (int i = 0; i < 10; i++) {
      assertThatThrownBy(() ->
              g.run(
                  "payments",
                  () -> {
                    throw new PermanentMessageException("card number invalid");
                  }))
          .isInstanceOf(PermanentMessageException.class);
    }
    assertThat(g.state("payments")).isEqualTo(DependencyGuard.State.CLOSED);
  }

  @Test
  void theFailureHandlerWaitsForTheBreakerWithoutCountingAttempts() {
    DependencyGuard g = guard();
    FailureHandler h =
        FailureHandlers.of(RetryPolicy.builder().maxAttempts(1).clock(clock).build());
    openIt(g);
    Message m = message();
    for (int attempt = 1; attempt <= 3; attempt++) {
      Exception refused = null;
      try {
        g.call("payments", this::succeeding);
      } catch (Exception e) {
        refused = e;
      }
      assertThat(h.decide(delivery(m, attempt), refused))
          .isEqualTo(new Retry(Duration.ofMillis(30_001).minusSeconds(10L * (attempt - 1))));
      time.advance(Duration.ofSeconds(10));
    }
  }

  @Test
  void theBuilderFindsThisModulesGuardThroughTheServiceFile() {
    assertThat(DependencyGuard.defaults()).isInstanceOf(CircuitBreakerDependencyGuard.class);
  }

  private static Message message() {
    return Message.builder("orders", "order.created").jsonPayload("{}").build();
  }

  private static Delivery delivery(Message message, int attempt) {
    return new Delivery() {
      @Override
      public Message message() {
        return message;
      }

      @Override
      public String topic() {
        return message.topic();
      }

      @Override
      public int partition() {
        return 0;
      }

      @Override
      public long offset() {
        return 42;
      }

      @Override
      public int attempt() {
        return attempt;
      }

      @Override
      public Optional<Connection> connection() {
        return Optional.empty();
      }

      @Override
      public Decoded<Object> decoded() {
        throw new IllegalStateException("no event types");
      }

      @Override
      public boolean advanceVersion(String entity, long version) {
        throw new IllegalStateException("not effectively-once");
      }
    };
  }
}
