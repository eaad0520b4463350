package dev.postbox.console;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Optional;
import org.springframework.stereotype.Component;

/** Formatting for the templates ({@code ${@fmt.age(...)}}): ages, instants, optionals. */
@Component("fmt")
public class Fmt {

  private static final DateTimeFormatter AT =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss 'UTC'").withZone(ZoneOffset.UTC);

  /** An age such as {@code 3d 4h}, {@code 5m 7s} or {@code 0s}. */
  public String age(Duration d) {
    if (d == null || d.isNegative() || d.isZero()) {
      return "0s";
    }
    long s = d.toSeconds();
    if (s >= 86_400) {
      return s / 86_400 + "d " + (s % 86_400) / 3600 + "h";
    }
    if (s >= 3600) {
      return s / 3600 + "h " + (s % 3600) / 60 + "m";
    }
    if (s >= 60) {
      return s / 60 + "m " + s % 60 + "s";
    }
    return s > 0 ? s + "s" : d.toMillis() + "ms";
  }

  /** The age of {@code at} now. */
  public String since(Instant at) {
    return at == null ? "" : age(Duration.between(at, Instant.now()));
  }

  public String at(Instant at) {
    return at == null ? "" : formatAt(at);
  }

  /** An instant as {@code 2026-12-04 19:20:01 UTC}. */
  static String formatAt(Instant at) {
    return AT.format(at);
  }

  /**
   * A user's role in lower case, with ", reveals" when they hold the reveal permission ({@link
   * Masking}).
   */
  public String role(org.springframework.security.core.Authentication who) {
    String role = "";
    if (who == null) {
      return role;
    }
    for (var a : who.getAuthorities()) {
      if (a.getAuthority().startsWith("ROLE_")) {
        role = a.getAuthority().substring("ROLE_".length()).toLowerCase(java.util.Locale.ROOT);
      }
    }
    return Masking.of(who).reveals() ? role + ", reveals" : role;
  }

  /**
   * A parked key's state: blocked behind a dead letter (until an operator acts), retrying now, due
   * now (its time has come or an operator released it: the consumer retries it at its next poll),
   * or parked until its next try.
   */
  public String parkedState(dev.postbox.admin.ParkedKey k) {
    if (k.blocked()) {
      return "blocked by a dead letter";
    }
    if (k.leased()) {
      return "retrying now";
    }
    return k.due() ? "due now: the consumer retries it next" : "parked until its next try";
  }

  /** A count with thousands separators ({@code 10,000}). */
  public static String count(long n) {
    return String.format(java.util.Locale.ROOT, "%,d", n);
  }

  /** The value or empty text. */
  public String opt(Optional<?> value) {
    return value == null ? "" : value.map(String::valueOf).orElse("");
  }
}
