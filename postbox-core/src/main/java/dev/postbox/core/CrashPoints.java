package dev.postbox.core;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Named crash points: one line at an exact step of the production code ({@code
 * CrashPoints.hit(CrashPoints.RELAY_AFTER_ACK_BEFORE_MARK)}) where the fault-injection harness can
 * halt the JVM as {@code kill -9} would, with no shutdown hooks and no finally blocks.
 *
 * <p>Inert unless the system property {@value #PROPERTY} is set when this class loads: then {@link
 * #hit(String)} is a single read of a static final field. The property lists points as {@code name}
 * (halt at the first hit) or {@code name@N} (halt at the N-th hit), separated by commas. Before
 * halting, the point prints {@code POSTBOX-CRASH <name>} to standard error so that the harness can
 * tell that the fault fired, then halts with exit code {@value #EXIT_CODE}.
 *
 * <p>Thread-safe.
 */
public final class CrashPoints {

  /** System property that enables crash points. */
  public static final String PROPERTY = "postbox.crash";

  /**
   * System property naming a file that makes the armed points of several processes fire once in
   * all: the first process to reach its armed hit creates the file and halts; a process that finds
   * the file there goes on. For a fault that must happen exactly once whichever of several
   * processes gets to it (the CDC relay's streaming instance, which a standby may replace before
   * the armed batch).
   */
  public static final String ONCE_PROPERTY = "postbox.crash.once";

  /** Exit code of a JVM halted by a crash point. */
  public static final int EXIT_CODE = 86;

  /**
   * Producer: the outbox rows are written (with {@code EmitMessageOutbox.inTransaction}: the
   * messages are encoded, to be emitted with the commit), the business transaction not yet
   * committed.
   */
  public static final String OUTBOX_BEFORE_COMMIT = "outbox.before-commit";

  /** Producer: the business transaction with its outbox rows has committed. */
  public static final String OUTBOX_AFTER_COMMIT = "outbox.after-commit";

  /** Relay: a batch is claimed, nothing of it sent yet. */
  public static final String RELAY_AFTER_CLAIM = "relay.after-claim";

  /** Relay: part of a batch is handed to the producer, the rest not yet. */
  public static final String RELAY_MID_BATCH = "relay.mid-batch";

  /** Relay: the broker acknowledged the batch, its rows are not yet marked published. */
  public static final String RELAY_AFTER_ACK_BEFORE_MARK = "relay.after-ack-before-mark";

  /** Relay: the batch's rows are marked published. */
  public static final String RELAY_AFTER_MARK = "relay.after-mark";

  /** {@code EFFECTIVELY_ONCE} consumer: the inbox row is inserted, the effect not yet applied. */
  public static final String CONSUMER_AFTER_INBOX_INSERT = "consumer.after-inbox-insert";

  /** Consumer: the effect is committed, the record's offset not yet committed. */
  public static final String CONSUMER_AFTER_EFFECT_BEFORE_OFFSET_COMMIT =
      "consumer.after-effect-before-offset-commit";

  /**
   * {@code EFFECTIVELY_ONCE} consumer: the effect and its stored result are committed, the
   * handler's {@code completed} (a responder's reply) has not run yet.
   */
  public static final String CONSUMER_AFTER_COMMIT_BEFORE_COMPLETED =
      "consumer.after-commit-before-completed";

  /** Consumer: inside a partition revocation, before the finished prefix is committed. */
  public static final String CONSUMER_DURING_REBALANCE = "consumer.during-rebalance";

  /**
   * {@code DEDUPLICATED} consumer: the handler's effect is done, its completion is not yet written
   * to the idempotency store (the at-risk window: a crash here repeats the effect once the lease
   * expires).
   */
  public static final String CONSUMER_AFTER_EFFECT_BEFORE_IDEMPOTENCY_COMPLETE =
      "consumer.after-effect-before-idempotency-complete";

  /**
   * Consume-transform-produce: the batch's outputs are sent and its input offsets added to the
   * Kafka transaction, which is not yet committed.
   */
  public static final String TRANSFORM_BEFORE_COMMIT =
      "consumer.transform-before-transaction-commit";

  /**
   * Requester: the broker accepted a request, its reply has not come yet (a crash here leaves the
   * request to be answered with nobody waiting; a caller retrying it with the same id gets the
   * responder's stored reply).
   */
  public static final String REQUESTER_AFTER_SEND = "requester.after-send-before-reply";

  /**
   * CDC relay: the broker acknowledged a batch streamed from the replication slot; none of it is
   * marked published, and the slot is not confirmed past it.
   */
  public static final String CDC_AFTER_ACK_BEFORE_MARK = "cdc.after-ack-before-mark";

  /**
   * CDC relay: like {@link #CDC_AFTER_ACK_BEFORE_MARK}, for a batch that ends inside a multi-event
   * transaction (the rest of that transaction is streamed but not acknowledged), the position where
   * a checkpoint on the commit LSN alone would skip the rest on restart.
   */
  public static final String CDC_MID_TRANSACTION = "cdc.mid-transaction";

  /**
   * Every crash point of the product, the one list of their names: production code calls {@link
   * #hit(String)} with one of the constants above, and the harnesses arm names from here ({@code
   * CrashPointNamesTest} in {@code postbox-architecture} fails on a name in the main code that is
   * not listed).
   */
  public static final List<String> ALL =
      List.of(
          OUTBOX_BEFORE_COMMIT,
          OUTBOX_AFTER_COMMIT,
          RELAY_AFTER_CLAIM,
          RELAY_MID_BATCH,
          RELAY_AFTER_ACK_BEFORE_MARK,
          RELAY_AFTER_MARK,
          CONSUMER_AFTER_INBOX_INSERT,
          CONSUMER_AFTER_EFFECT_BEFORE_OFFSET_COMMIT,
          CONSUMER_AFTER_COMMIT_BEFORE_COMPLETED,
          CONSUMER_DURING_REBALANCE,
          CONSUMER_AFTER_EFFECT_BEFORE_IDEMPOTENCY_COMPLETE,
          TRANSFORM_BEFORE_COMMIT,
          REQUESTER_AFTER_SEND,
          CDC_AFTER_ACK_BEFORE_MARK,
          CDC_MID_TRANSACTION);

  /** Marker printed to standard error just before the halt. */
  public static final String MARKER = "POSTBOX-CRASH";

  private static final Map<String, Long> ARMED = parse(System.getProperty(PROPERTY, ""));
  private static final boolean ENABLED = !ARMED.isEmpty();
  private static final Map<String, AtomicLong> HITS = new ConcurrentHashMap<>();
  private static final String ONCE = System.getProperty(ONCE_PROPERTY, "");

  private CrashPoints() {}

  /**
   * Passes through, unless {@code name} is armed and this is the hit it is armed for: then halts
   * the JVM.
   */
  public static void hit(String name) {
    if (!ENABLED) {
      return;
    }
    Long at = ARMED.get(name);
    if (at == null) {
      return;
    }
    long n = HITS.computeIfAbsent(name, k -> new AtomicLong()).incrementAndGet();
    if (n == at && claimed()) {
      System.err.println(MARKER + " " + name);
      System.err.flush();
      Runtime.getRuntime().halt(EXIT_CODE);
    }
  }

  /** Whether this process may halt: always, unless another already took the once-file. */
  private static boolean claimed() {
    if (ONCE.isEmpty()) {
      return true;
    }
    try {
      java.nio.file.Files.createFile(java.nio.file.Path.of(ONCE));
      return true;
    } catch (java.nio.file.FileAlreadyExistsException e) {
      return false; // another process fired it
    } catch (java.io.IOException e) {
      return true; // cannot tell: a fault too many rather than none
    }
  }

  /** Whether any crash point is armed in this JVM. */
  public static boolean enabled() {
    return ENABLED;
  }

  private static Map<String, Long> parse(String spec) {
    Map<String, Long> armed = new ConcurrentHashMap<>();
    for (String part : spec.split(",")) {
      String p = part.trim();
      if (p.isEmpty()) {
        continue;
      }
      int at = p.lastIndexOf('@');
      if (at > 0) {
        armed.put(p.substring(0, at), Long.parseLong(p.substring(at + 1)));
      } else {
        armed.put(p, 1L);
      }
    }
    return Map.copyOf(armed);
  }
}
