package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The back-off's arithmetic on a clock the test moves. */
class LoginThrottleTest {

  static final class MovableClock extends Clock {
    Instant now = Instant.parse("2026-12-04T12:00:00Z");

    @Override
    public java.time.ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return now;
    }
  }

  final MovableClock clock = new MovableClock();
  final LoginThrottle throttle =
      new LoginThrottle(
          3,
          Duration.ofSeconds(1),
          Duration.ofMinutes(15),
          Set.of("admin", "olivia")::contains,
          clock);

  @Test
  void theWaitDoublesWithEachFailureUpToTheMaximumAndAppliesToThePairOnly() {
    for (int i = 0; i < 3; i++) {
      assertThat(throttle.wait("a", "olivia")).isEmpty();
      throttle.failed("a", "olivia");
    }
    assertThat(throttle.wait("a", "olivia")).contains(Duration.ofSeconds(1));
    assertThat(throttle.wait("a", "admin")).as("another account, same address").isEmpty();
    assertThat(throttle.wait("b", "olivia")).as("a clean address").isEmpty();
    clock.now = clock.now.plusSeconds(1);
    assertThat(throttle.wait("a", "olivia")).isEmpty();
    throttle.failed("a", "olivia");
    assertThat(throttle.wait("a", "olivia")).contains(Duration.ofSeconds(2));
    for (int i = 0; i < 20; i++) {
      throttle.failed("a", "olivia");
    }
    assertThat(throttle.wait("a", "olivia")).contains(Duration.ofMinutes(15));
    throttle.succeeded("a", "olivia");
    assertThat(throttle.wait("a", "olivia")).as("after a success elsewhere").isEmpty();
  }

  @Test
  void anAccountGuessedFromManyAddressesBacksOffOnlyForAddressesThatFailedForIt() {
    for (int i = 0; i < 3; i++) {
      throttle.failed("10.0.0." + i, "admin");
    }
    assertThat(throttle.wait("10.0.0.0", "admin")).isPresent();
    assertThat(throttle.wait("10.0.0.9", "admin")).isEqualTo(Optional.empty());
  }

  @Test
  void namesThatAreNoAccountCountAsOneSoCyclingThemNeitherResetsNorGrowsTheState() {
    for (int i = 0; i < 3; i++) {
      throttle.failed("a", "admin");
    }
    for (int i = 0; i < 20_000; i++) {
      throttle.failed("a", "name-" + i);
    }
    assertThat(throttle.wait("a", "admin")).contains(Duration.ofSeconds(1));
    assertThat(throttle.account("name-1")).isEqualTo(LoginThrottle.UNKNOWN);
    assertThat(throttle.wait("a", "someone-new")).isPresent();
  }
}
