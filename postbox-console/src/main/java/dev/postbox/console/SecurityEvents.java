package dev.postbox.console;

import io.github.resilience4j.ratelimiter.RateLimiter;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The console's security events (failed and throttled logins, denied and rejected requests): each
 * is logged at WARN and written to {@code postbox_replay_audit} (actions of migration V18, nothing
 * changed: {@code how_many} 0), at most {@value #PER_MINUTE} a minute (a Resilience4j rate
 * limiter): past that they are counted, and the next one recorded says how many were not.
 */
final class SecurityEvents {

  static final int PER_MINUTE = 30;

  /** The audit actions. */
  enum Kind {
    LOGIN_FAILED,
    LOGIN_THROTTLED,
    ACCESS_DENIED,
    REQUEST_REJECTED
  }

  private static final Logger log = LoggerFactory.getLogger(SecurityEvents.class);
  private static final int MAX_TEXT = 200;

  private final DataSource dataSource;
  private final RateLimiter limiter =
      RateLimiter.of(
          "postbox-console-security-events",
          RateLimiterConfig.custom()
              .limitForPeriod(PER_MINUTE)
              .limitRefreshPeriod(Duration.ofMinutes(1))
              .timeoutDuration(Duration.ZERO)
              .build());
  private final AtomicLong unrecorded = new AtomicLong();

  SecurityEvents(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /**
   * Records that {@code who} (a user name, as given, or "anonymous") from {@code address} met
   * {@code kind}; {@code what} says on what.
   */
  void record(Kind kind, String who, String address, String what) {
    if (!limiter.acquirePermission()) {
      unrecorded.incrementAndGet();
      return;
    }
    long skipped = unrecorded.getAndSet(0);
    String subject = clip(what + " from " + address);
    String reason = skipped == 0 ? null : skipped + " earlier security events not recorded (limit)";
    log.warn(
        "postbox console security: {} by {}: {}{}",
        kind,
        clip(who),
        subject,
        reason == null ? "" : " (" + reason + ")");
    try (Connection c = dataSource.getConnection();
        PreparedStatement s =
            c.prepareStatement(
                "INSERT INTO postbox_replay_audit (by_whom, what, how_many, action, reason)"
                    + " VALUES (?, ?, 0, ?, ?)")) {
      s.setString(1, clip(who));
      s.setString(2, subject);
      s.setString(3, kind.name());
      s.setString(4, reason);
      s.executeUpdate();
    } catch (SQLException e) {
      // the database's own state is reported once by its Dependency; the event is in the log
      log.debug("security event not written to the audit: {}", e.toString());
    }
  }

  private static String clip(String v) {
    String s = v == null || v.isBlank() ? "anonymous" : v.replaceAll("\\p{Cntrl}", "?");
    return s.length() > MAX_TEXT ? s.substring(0, MAX_TEXT) + "..." : s;
  }
}
