package dev.postbox.core.consumer;

import static dev.postbox.core.consumer.TestSupport.delivery;
import static dev.postbox.core.consumer.TestSupport.message;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.FailureDecision.GiveUp;
import dev.postbox.core.consumer.FailureDecision.Retry;
import dev.postbox.core.consumer.TestSupport.FakeClock;
import java.sql.SQLTransientException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class FailureHandlersTest {

  private final FakeClock clock = new FakeClock();

  /** No jitter, so decisions can be compared exactly. */
  private RetryPolicy.Builder policy() {
    return RetryPolicy.builder()
        .clock(clock)
        .backoff(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), 2, 0));
  }

  private static final Exception TRANSIENT = new SQLTransientException("db busy");

  @Test
  void retriesTransientFailuresWithBackoffUntilTheAttemptsRunOut() {
    FailureHandler h = FailureHandlers.of(policy().maxAttempts(3).build());
    Message m = message();
    assertThat(h.decide(delivery(m, 1), TRANSIENT)).isEqualTo(new Retry(Duration.ofMillis(100)));
    assertThat(h.decide(delivery(m, 2), TRANSIENT)).isEqualTo(new Retry(Duration.ofMillis(200)));
    assertThat(h.decide(delivery(m, 3), TRANSIENT))
        .isInstanceOfSatisfying(
            GiveUp.class, g -> assertThat(g.reason()).startsWith("failed 3 attempts"));
  }

  @Test
  void givesUpOnPermanentFailuresAtOnce() {
    List<DeadLetterEvent> dead = new ArrayList<>();
    FailureHandler h =
        FailureHandlers.builder().retryPolicy(policy().build()).onDeadLetter(dead::add).build();
    Message m = message();
    PermanentMessageException poison = new PermanentMessageException("poison");
    FailureDecision d = h.decide(delivery(m, 1), poison);
    assertThat(d).isInstanceOf(GiveUp.class);
    h.onGiveUp(delivery(m, 1), poison, ((GiveUp) d).reason());
    assertThat(dead)
        .singleElement()
        .satisfies(e -> {
          assertThat(e.failureClass()).isEqualTo(FailureClass.PERMANENT);
          assertThat(e.error()).isSameAs(poison);
        });
  }

  @Test
  void deadLettersOfExhaustedRetriesAreTransient() {
    List<DeadLetterEvent> dead = new ArrayList<>();
    FailureHandler h =
        FailureHandlers.builder()
            .retryPolicy(policy().maxAttempts(1).build())
            .onDeadLetter(dead::add)
            .build();
    Message m = message();
    GiveUp g = (GiveUp) h.decide(delivery(m, 1), TRANSIENT);
    h.onGiveUp(delivery(m, 1), TRANSIENT, g.reason());
    assertThat(dead)
        .singleElement()
        .extracting(DeadLetterEvent::failureClass)
        .isEqualTo(FailureClass.TRANSIENT);
  }

  @Test
  void givesUpWhenTheTimeSinceTheFirstFailureRunsOut() {
    FailureHandler h =
        FailureHandlers.of(policy().maxAttempts(100).maxDuration(Duration.ofSeconds(10)).build());
    Message m = message();
    assertThat(h.decide(delivery(m, 1), TRANSIENT)).isInstanceOf(Retry.class);
    clock.advance(Duration.ofSeconds(9));
    assertThat(h.decide(delivery(m, 2), TRANSIENT)).isInstanceOf(Retry.class);
    clock.advance(Duration.ofSeconds(1));
    assertThat(h.decide(delivery(m, 3), TRANSIENT))
        .isInstanceOfSatisfying(
            GiveUp.class, g -> assertThat(g.reason()).contains("maxDuration PT10S"));
  }

  @Test
  void theRuntimesFirstAttemptStartsTheBookkeepingAfresh() {
    FailureHandler h =
        FailureHandlers.of(policy().maxAttempts(2).maxDuration(Duration.ofSeconds(10)).build());
    Message m = message();
    assertThat(h.decide(delivery(m, 1), TRANSIENT)).isInstanceOf(Retry.class);
    clock.advance(Duration.ofMinutes(5)); // succeeded meanwhile; redelivered much later
    assertThat(h.decide(delivery(m, 1), TRANSIENT)).isInstanceOf(Retry.class);
    assertThat(h.decide(delivery(m, 2), TRANSIENT)).isInstanceOf(GiveUp.class);
  }

  @Test
  void forgedRetryHeadersChangeNothing() {
    FailureHandler h =
        FailureHandlers.of(policy().maxAttempts(4).maxDuration(Duration.ofSeconds(30)).build());
    Message plain = message();
    Message forged =
        Message.builder("orders", "order.created")
            .header("retry-attempt", "-1")
            .header("x-attempt", "999")
            .header("retry-at", "3000-01-01T00:00:00Z")
            .header("first-failure", "1970-01-01T00:00:00Z")
            .jsonPayload("{}")
            .build();
    List<FailureDecision> forPlain = new ArrayList<>();
    List<FailureDecision> forForged = new ArrayList<>();
    for (int attempt = 1; attempt <= 4; attempt++) {
      forPlain.add(h.decide(delivery(plain, attempt), TRANSIENT));
      forForged.add(h.decide(delivery(forged, attempt), TRANSIENT));
      clock.advance(Duration.ofSeconds(1));
    }
    assertThat(forForged).isEqualTo(forPlain);
    assertThat(forPlain)
        .containsExactly(
            new Retry(Duration.ofMillis(100)),
            new Retry(Duration.ofMillis(200)),
            new Retry(Duration.ofMillis(400)),
            new GiveUp("failed 4 attempts (maxAttempts): " + TRANSIENT));
  }

  @Test
  void openCircuitFailuresAreNotCountedNorTimed() {
    List<RetryEvent> retries = new ArrayList<>();
    FailureHandler h =
        FailureHandlers.builder()
            .retryPolicy(policy().maxAttempts(3).maxDuration(Duration.ofSeconds(10)).build())
            .onRetry(retries::add)
            .build();
    Message m = message();
    int attempt = 1;
    assertThat(h.decide(delivery(m, attempt++), TRANSIENT)).isInstanceOf(Retry.class);
    // a 40 s outage: far more attempts and time than the policy allows
    for (int i = 0; i < 8; i++) {
      DependencyUnavailableException open =
          new DependencyUnavailableException("payments", Duration.ofSeconds(5));
      assertThat(h.decide(delivery(m, attempt++), new RuntimeException("wrapped", open)))
          .isEqualTo(new Retry(Duration.ofSeconds(5)));
      clock.advance(Duration.ofSeconds(5));
    }
    assertThat(h.decide(delivery(m, attempt++), TRANSIENT)).isInstanceOf(Retry.class);
    assertThat(h.decide(delivery(m, attempt), TRANSIENT))
        .isInstanceOfSatisfying(
            GiveUp.class, g -> assertThat(g.reason()).startsWith("failed 3 attempts"));
    assertThat(retries).hasSize(10);
    assertThat(retries.get(1).cause()).isEqualTo(RetryEvent.Cause.DEPENDENCY_UNAVAILABLE);
    assertThat(retries.get(1).countedAttempts()).isEqualTo(1);
    assertThat(retries.get(9).cause()).isEqualTo(RetryEvent.Cause.BACKOFF);
    assertThat(retries.get(9).countedAttempts()).isEqualTo(2);
  }

  @Test
  void theRetryBudgetSpacesRetriesAcrossTheSubscription() {
    List<RetryEvent> retries = new ArrayList<>();
    FailureHandler h =
        FailureHandlers.builder()
            .retryPolicy(policy().build())
            .retryBudget(2)
            .onRetry(retries::add)
            .build();
    List<FailureDecision> decisions = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      decisions.add(h.decide(delivery(message(), 1), TRANSIENT));
    }
    assertThat(decisions)
        .containsExactly(
            new Retry(Duration.ofMillis(100)),
            new Retry(Duration.ofMillis(100)),
            new Retry(Duration.ofMillis(500)),
            new Retry(Duration.ofMillis(1000)));
    assertThat(retries.get(3).cause()).isEqualTo(RetryEvent.Cause.RETRY_BUDGET);
    clock.advance(Duration.ofSeconds(1)); // two tokens back: the debt is paid, none saved
    assertThat(h.decide(delivery(message(), 1), TRANSIENT))
        .isEqualTo(new Retry(Duration.ofMillis(500)));
    clock.advance(Duration.ofSeconds(10)); // the bucket refills to one second's worth, no more
    assertThat(h.decide(delivery(message(), 1), TRANSIENT))
        .isEqualTo(new Retry(Duration.ofMillis(100)));
    assertThat(h.decide(delivery(message(), 1), TRANSIENT))
        .isEqualTo(new Retry(Duration.ofMillis(100)));
    assertThat(h.decide(delivery(message(), 1), TRANSIENT))
        .isEqualTo(new Retry(Duration.ofMillis(500)));
  }

  @Test
  void openCircuitRetriesDoNotUseTheBudget() {
    FailureHandler h =
        FailureHandlers.builder().retryPolicy(policy().build()).retryBudget(1).build();
    for (int i = 0; i < 5; i++) {
      assertThat(
              h.decide(
                  delivery(message(), 1),
                  new DependencyUnavailableException("payments", Duration.ofSeconds(2))))
          .isEqualTo(new Retry(Duration.ofSeconds(2)));
    }
    assertThat(h.decide(delivery(message(), 1), TRANSIENT))
        .isEqualTo(new Retry(Duration.ofMillis(100)));
  }

  @Test
  void trackingIsBoundedAndDroppedOnGiveUp() {
    PolicyFailureHandler h =
        (PolicyFailureHandler)
            FailureHandlers.builder()
                .retryPolicy(policy().maxAttempts(2).build())
                .maxTrackedMessages(2)
                .build();
    Message a = message();
    h.decide(delivery(a, 1), TRANSIENT);
    h.decide(delivery(message(), 1), TRANSIENT);
    h.decide(delivery(message(), 1), TRANSIENT);
    assertThat(h.trackedCount()).isEqualTo(2);
    // a was evicted (least recently failed): its next failure starts afresh rather than giving up
    assertThat(h.decide(delivery(a, 2), TRANSIENT)).isInstanceOf(Retry.class);
    assertThat(h.decide(delivery(a, 3), TRANSIENT)).isInstanceOf(GiveUp.class);
    assertThat(h.trackedCount()).isEqualTo(1);
  }

  @Test
  void aThrowingRetryListenerDoesNotChangeTheDecision() {
    FailureHandler h =
        FailureHandlers.builder()
            .retryPolicy(policy().build())
            .onRetry(e -> {
              throw new IllegalStateException("listener bug");
            })
            .build();
    assertThat(h.decide(delivery(message(), 1), TRANSIENT))
        .isEqualTo(new Retry(Duration.ofMillis(100)));
  }

  @Test
  void buildFailsFastOnBadSettings() {
    assertThatThrownBy(() -> FailureHandlers.builder().retryBudget(0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> FailureHandlers.builder().maxTrackedMessages(0).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> FailureHandlers.builder().retryPolicy(null))
        .isInstanceOf(NullPointerException.class);
  }
}
