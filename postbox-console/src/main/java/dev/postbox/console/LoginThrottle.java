package dev.postbox.console;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * Exponential back-off of login attempts, per account and per (client address, account), that never
 * locks out the right password from an address that has not failed for that account.
 *
 * <ul>
 *   <li>Each failure counts for the pair (address, account) and for the account. After {@code
 *       freeFailures} failures, the next attempt waits {@code base × 2^(failures − freeFailures)},
 *       at most {@code maxBackoff}; a refused attempt is not checked and does not count.
 *   <li>The pair's back-off refuses attempts from that address for that account only: one person's
 *       typos behind a shared proxy address do not touch the other accounts behind it.
 *   <li>The account's back-off (a guesser spread over many addresses) refuses only attempts from
 *       addresses that have themselves failed for the account; a clean address is always checked.
 *   <li>A success clears its pair. Counts are forgotten {@code maxBackoff} after their last
 *       failure.
 * </ul>
 *
 * <p>Bounded memory without a reset by cycling names: user names that are not accounts of the
 * console all count as one account ({@value #UNKNOWN}), so trying 10,000 names creates one entry
 * per address, not 10,000; the entries live in Caffeine caches of at most {@value #MAX_ENTRIES}
 * (evicting the least used), which only new client addresses, not new names, can fill.
 */
final class LoginThrottle {

  static final String UNKNOWN = "(unknown user)";
  static final int MAX_ENTRIES = 10_000;

  private record Failures(int count, Instant last) {}

  private final int freeFailures;
  private final Duration base;
  private final Duration maxBackoff;
  private final Predicate<String> isAccount;
  private final Clock clock;
  private final Cache<String, Failures> accounts;
  private final Cache<String, Failures> pairs;

  LoginThrottle(
      int freeFailures,
      Duration base,
      Duration maxBackoff,
      Predicate<String> isAccount,
      Clock clock) {
    if (freeFailures < 1) {
      throw new IllegalArgumentException("login free failures must be at least 1");
    }
    this.freeFailures = freeFailures;
    this.base = base;
    this.maxBackoff = maxBackoff;
    this.isAccount = isAccount;
    this.clock = clock;
    this.accounts = cache(maxBackoff);
    this.pairs = cache(maxBackoff);
  }

  private Cache<String, Failures> cache(Duration forget) {
    return Caffeine.newBuilder()
        .maximumSize(MAX_ENTRIES)
        .expireAfterWrite(forget)
        .ticker(() -> java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(clock.millis()))
        .build();
  }

  /** The account a user name counts for ({@value #UNKNOWN} for names that are no account). */
  String account(String username) {
    String name = username == null ? "" : username.trim().toLowerCase(Locale.ROOT);
    return isAccount.test(name) ? name : UNKNOWN;
  }

  /** How long an attempt of {@code username} from {@code address} must wait; empty: check it. */
  Optional<Duration> wait(String address, String username) {
    String account = account(username);
    Instant now = clock.instant();
    Failures pair = pairs.getIfPresent(pair(address, account));
    if (pair == null) {
      return Optional.empty(); // a clean address is always checked
    }
    Duration wait = remaining(pair, now);
    Failures acc = accounts.getIfPresent(account);
    if (acc != null) {
      Duration accWait = remaining(acc, now);
      wait = accWait.compareTo(wait) > 0 ? accWait : wait;
    }
    return wait.isZero() ? Optional.empty() : Optional.of(wait);
  }

  /** Counts a failed attempt. */
  void failed(String address, String username) {
    String account = account(username);
    Instant now = clock.instant();
    pairs.asMap().merge(pair(address, account), new Failures(1, now), LoginThrottle::add);
    accounts.asMap().merge(account, new Failures(1, now), LoginThrottle::add);
  }

  /** A successful login clears its pair. */
  void succeeded(String address, String username) {
    pairs.invalidate(pair(address, account(username)));
  }

  private static Failures add(Failures old, Failures one) {
    return new Failures(old.count() + 1, one.last());
  }

  private Duration remaining(Failures f, Instant now) {
    if (f.count() < freeFailures) {
      return Duration.ZERO;
    }
    int doublings = Math.min(f.count() - freeFailures, 30);
    Duration backoff = base.multipliedBy(1L << doublings);
    if (backoff.compareTo(maxBackoff) > 0) {
      backoff = maxBackoff;
    }
    Duration left = Duration.between(now, f.last().plus(backoff));
    return left.isNegative() ? Duration.ZERO : left;
  }

  private static String pair(String address, String account) {
    return address + "\u0000" + account;
  }
}
