package dev.postbox.core.consumer;

import static dev.postbox.core.consumer.FailureClass.PERMANENT;
import static dev.postbox.core.consumer.FailureClass.TRANSIENT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.Backoff;
import dev.postbox.core.DecodingException;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.TestSupport.FakeClock;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransactionRollbackException;
import java.sql.SQLTransientConnectionException;
import java.sql.SQLTransientException;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

  /** A transport's own retriable error (a stand-in: core names no transport). */
  static class TransportRetriable extends RuntimeException {
    TransportRetriable(String message) {
      super(message);
    }
  }

  /** A subclass of it, as a transport's concrete errors are. */
  static final class NotLeaderForPartition extends TransportRetriable {
    NotLeaderForPartition() {
      super("not leader");
    }
  }

  /** Strict: only the lists decide, so the built-in transient list is what is tested. */
  private final RetryPolicy strict = RetryPolicy.builder().retryIf(t -> false).build();

  @Test
  void permanentFailuresOfTheDefaultTable() {
    RetryPolicy p = RetryPolicy.defaults();
    assertThat(p.classify(new PermanentMessageException("poison"))).isEqualTo(PERMANENT);
    assertThat(p.classify(DecodingException.builder("bad json", new byte[] {1}).build()))
        .isEqualTo(PERMANENT);
    assertThat(p.classify(new TenantRejectedException("no tenant"))).isEqualTo(PERMANENT);
  }

  @Test
  void transientFailuresOfTheDefaultTable() {
    assertThat(strict.classify(new SQLTransientException("x"))).isEqualTo(TRANSIENT);
    assertThat(strict.classify(new SQLTransactionRollbackException("deadlock")))
        .isEqualTo(TRANSIENT);
    assertThat(strict.classify(new SQLRecoverableException("x"))).isEqualTo(TRANSIENT);
    assertThat(strict.classify(new SQLException("serialization failure", "40001")))
        .isEqualTo(TRANSIENT);
    assertThat(strict.classify(new SQLException("deadlock detected", "40P01")))
        .isEqualTo(TRANSIENT);
    assertThat(strict.classify(new SQLException("connection failure", "08006")))
        .isEqualTo(TRANSIENT);
    assertThat(strict.classify(new TimeoutException())).isEqualTo(TRANSIENT);
    assertThat(strict.classify(new SocketTimeoutException())).isEqualTo(TRANSIENT);
    assertThat(strict.classify(new DependencyUnavailableException("payments", Duration.ZERO)))
        .isEqualTo(TRANSIENT);
  }

  @Test
  void aTransportsRetriableErrorsAreTransientOnceTheEngineNamesThem() {
    RetryPolicy forTransport =
        ((StandardRetryPolicy) strict).withTransportRetriable(t -> t instanceof TransportRetriable);
    assertThat(forTransport.classify(new TransportRetriable("broker"))).isEqualTo(TRANSIENT);
    assertThat(forTransport.classify(new NotLeaderForPartition())).isEqualTo(TRANSIENT);
    assertThat(
            forTransport.classify(
                new IllegalStateException("wrapped", new NotLeaderForPartition())))
        .isEqualTo(TRANSIENT);
    assertThat(forTransport.classify(new PermanentMessageException("poison"))).isEqualTo(PERMANENT);
    assertThat(forTransport.classify(new IllegalStateException())).isEqualTo(PERMANENT);
    // core alone knows no transport's errors
    assertThat(strict.classify(new NotLeaderForPartition())).isEqualTo(PERMANENT);
  }

  @Test
  void aHandlerBuiltOnAPolicyRetriesTheTransportsErrorsAndKeepsItsState() {
    FailureHandler plain = FailureHandlers.of(strict);
    FailureHandler forTransport = plain.withTransientErrors(t -> t instanceof TransportRetriable);
    var delivery = TestSupport.delivery(TestSupport.message(), 1);
    assertThat(plain.decide(delivery, new NotLeaderForPartition()))
        .isInstanceOf(FailureDecision.GiveUp.class);
    assertThat(forTransport.decide(delivery, new NotLeaderForPartition()))
        .isInstanceOf(FailureDecision.Retry.class);
    // the copy shares the tracked failures of the handler it came from
    assertThat(((PolicyFailureHandler) plain).trackedCount()).isEqualTo(1);
    // a handler of one's own is kept as it is
    FailureHandler own = (d, e) -> new FailureDecision.GiveUp("mine");
    assertThat(own.withTransientErrors(t -> true)).isSameAs(own);
  }

  @Test
  void everythingElseIsDecidedByRetryIf() {
    assertThat(RetryPolicy.defaults().classify(new IllegalStateException())).isEqualTo(TRANSIENT);
    assertThat(RetryPolicy.defaults().classify(new IOException())).isEqualTo(TRANSIENT);
    assertThat(strict.classify(new IllegalStateException())).isEqualTo(PERMANENT);
    assertThat(strict.classify(new IOException("plain I/O is not on the list")))
        .isEqualTo(PERMANENT);
    assertThat(strict.classify(new SQLException("unique violation", "23505"))).isEqualTo(PERMANENT);
    RetryPolicy byMessage =
        RetryPolicy.builder().retryIf(t -> String.valueOf(t.getMessage()).contains("busy")).build();
    assertThat(byMessage.classify(new IllegalStateException("busy"))).isEqualTo(TRANSIENT);
    assertThat(byMessage.classify(new IllegalStateException("broken"))).isEqualTo(PERMANENT);
  }

  @Test
  void retryOnAndAbortOnMatchSubclassesAndAbortOnWins() {
    RetryPolicy p =
        RetryPolicy.builder()
            .retryIf(t -> false)
            .retryOn(IOException.class)
            .abortOn(FileNotFoundException.class, SQLTransientConnectionException.class)
            .build();
    assertThat(p.classify(new IOException())).isEqualTo(TRANSIENT);
    assertThat(p.classify(new FileNotFoundException())).isEqualTo(PERMANENT);
    // abortOn also beats the built-in transient list
    assertThat(p.classify(new SQLTransientConnectionException())).isEqualTo(PERMANENT);
    assertThat(p.classify(new SQLTransientException())).isEqualTo(TRANSIENT);
  }

  @Test
  void theCauseChainIsSearched() {
    assertThat(
            RetryPolicy.defaults()
                .classify(new RuntimeException(new PermanentMessageException("poison"))))
        .isEqualTo(PERMANENT);
    assertThat(strict.classify(new RuntimeException(new SQLTransientException())))
        .isEqualTo(TRANSIENT);
    assertThat(strict.classify(new RuntimeException(new RuntimeException(new TimeoutException()))))
        .isEqualTo(TRANSIENT);
    RetryPolicy abort = RetryPolicy.builder().abortOn(ArithmeticException.class).build();
    assertThat(abort.classify(new IllegalStateException(new ArithmeticException())))
        .isEqualTo(PERMANENT);
    // permanent anywhere in the chain beats transient on top
    assertThat(strict.classify(new SQLTransientException("x", new PermanentMessageException("p"))))
        .isEqualTo(PERMANENT);
  }

  @Test
  void aCauseCycleEnds() {
    RuntimeException a = new RuntimeException("a");
    RuntimeException b = new RuntimeException("b", a);
    a.initCause(b);
    assertThat(strict.classify(a)).isEqualTo(PERMANENT);
    assertThat(RetryPolicy.defaults().classify(a)).isEqualTo(TRANSIENT);
  }

  @Test
  void buildFailsFastOnBadSettings() {
    assertThatThrownBy(() -> RetryPolicy.builder().maxAttempts(0).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxAttempts");
    assertThatThrownBy(() -> RetryPolicy.builder().maxDuration(Duration.ZERO).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxDuration");
    assertThatThrownBy(() -> RetryPolicy.builder().maxDuration(Duration.ofSeconds(-1)).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() ->
            RetryPolicy.builder()
                .retryOn(IOException.class, TimeoutException.class)
                .abortOn(IOException.class)
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("java.io.IOException")
        .hasMessageNotContaining("TimeoutException");
    assertThatThrownBy(() -> RetryPolicy.builder().retryOn((Class<? extends Throwable>) null))
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void defaults() {
    RetryPolicy p = RetryPolicy.defaults();
    assertThat(p.maxAttempts()).isEqualTo(3);
    assertThat(p.maxDuration()).isEqualTo(Duration.ofMinutes(1));
    assertThat(p.backoff())
        .isEqualTo(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), 2, 0.5));
  }

  @Test
  void attemptsAreBounded() {
    FakeClock clock = new FakeClock();
    RetryPolicy p = RetryPolicy.builder().maxAttempts(3).clock(clock).build();
    Instant first = clock.instant();
    assertThat(p.nextDelay(1, first)).isPresent();
    assertThat(p.nextDelay(2, first)).isPresent();
    assertThat(p.nextDelay(3, first)).isEmpty();
    assertThat(RetryPolicy.builder().maxAttempts(1).build().nextDelay(1, first)).isEmpty();
  }

  @Test
  void timeSinceTheFirstFailureIsBoundedOnTheInjectedClock() {
    FakeClock clock = new FakeClock();
    RetryPolicy p =
        RetryPolicy.builder()
            .maxAttempts(100)
            .maxDuration(Duration.ofSeconds(10))
            .clock(clock)
            .build();
    Instant first = clock.instant();
    clock.advance(Duration.ofMillis(9_999));
    assertThat(p.nextDelay(5, first)).isPresent();
    clock.advance(Duration.ofMillis(1));
    assertThat(p.nextDelay(5, first)).isEmpty();
  }

  @Test
  void backoffGrowsWithinTheJitterBounds() {
    RetryPolicy p = RetryPolicy.builder().maxAttempts(10).clock(new FakeClock()).build();
    Instant first = p.clock().instant();
    long[] capsMillis = {100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000};
    for (int attempt = 1; attempt <= 9; attempt++) {
      Duration cap = Duration.ofMillis(capsMillis[attempt - 1]);
      for (int i = 0; i < 200; i++) {
        Duration d = p.nextDelay(attempt, first).orElseThrow();
        assertThat(d).as("attempt %d", attempt).isBetween(cap.dividedBy(2), cap);
      }
    }
  }
}
