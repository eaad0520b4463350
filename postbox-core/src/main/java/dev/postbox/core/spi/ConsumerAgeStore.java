package dev.postbox.core.spi;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * Where the running instances of a subscription publish, per queue they consume, the time of the
 * oldest message they received and have not finished, so that a process without a consumer (a
 * command line, a console) can read a queue's lag as age and tell an idle queue from a stalled one.
 * {@code postbox-jdbc} implements it for PostgreSQL ({@code PostgresConsumerAgeStore}).
 *
 * <p>An instance reports the instant (not the age), so a reader computes the age on its own clock
 * at the time it reads, however long ago the report was made; a report older than the reader's
 * staleness bound (its instance stopped or lost the store) counts as unknown. Times are the
 * callers' (the application's clock): instances and readers on machines with skewed clocks should
 * keep the staleness bound well above the skew.
 *
 * <p>Implementations must be thread-safe.
 */
public interface ConsumerAgeStore {

  /**
   * How long implementations keep a report at least: a report older than this may be deleted by the
   * next report of any instance of its subscription.
   */
  Duration RETENTION = Duration.ofHours(1);

  /**
   * Records what {@code instance} of {@code subscription} has unfinished now, replacing its
   * previous report: for each queue it consumes, the time of its oldest unfinished message, or
   * empty when it has none. Queues of an earlier report that {@code oldestUnfinished} does not name
   * any more (the instance stopped consuming them) are dropped from its report.
   *
   * @param now the reporter's time of the report
   */
  void report(
      String subscription,
      String instance,
      Map<String, Optional<Instant>> oldestUnfinished,
      Instant now);

  /** Removes every report of {@code instance} of {@code subscription} (a clean shutdown). */
  void forget(String subscription, String instance);

  /**
   * The oldest unfinished message of each queue of {@code subscription} across the instances that
   * reported it within {@code staleAfter} before {@code now}, by queue name: the earliest time any
   * of them reported, or empty when all of them reported nothing unfinished. A queue no instance
   * reported within that bound is absent (unknown).
   */
  Map<String, Optional<Instant>> read(String subscription, Instant now, Duration staleAfter);
}
