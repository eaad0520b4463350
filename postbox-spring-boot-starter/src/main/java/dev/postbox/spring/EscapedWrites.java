package dev.postbox.spring;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Notices, in an effectively-once listener's transaction, writes that Spring commits apart from the
 * message's dedupe record, which a retry or a redelivery then repeats:
 *
 * <ul>
 *   <li>the listener's transaction was <b>suspended</b> while the handler ran: a
 *       {@code @Transactional(propagation = REQUIRES_NEW)} (or {@code NOT_SUPPORTED}) method, or a
 *       {@code TransactionTemplate} of that propagation, of the same transaction manager, seen by a
 *       {@link TransactionSynchronization} registered on the listener's transaction (Spring calls
 *       its {@code suspend()} before it begins the inner one);
 *   <li>a connection of <b>another {@code DataSource}</b> was bound to the thread by the end of the
 *       handler: {@code JdbcTemplate} (or anything using {@code DataSourceUtils}) on a second
 *       {@code DataSource}, in auto-commit.
 * </ul>
 *
 * <p>Not seen: a connection taken from another {@code DataSource} directly ({@code
 * getConnection()}, no Spring), or a complete transaction of another transaction manager inside the
 * handler (it binds and unbinds its own resources without touching the listener's synchronization).
 *
 * <p>What is seen is reported per {@code postbox.consumers.escaped-writes}: {@code warn} logs it
 * once per consumer and kind, naming the consumer; {@code fail} fails the attempt with a {@link
 * ListenerTransactionEscapedException} (permanent: not retried, so the escaped write is not
 * repeated; the dedupe record and the handler's other writes roll back).
 */
final class EscapedWrites {

  private final PostboxProperties.Consumers.EscapedWrites mode;
  private final Consumer<String> warn;
  private final Set<String> warned = ConcurrentHashMap.newKeySet();

  EscapedWrites(PostboxProperties.Consumers.EscapedWrites mode, Consumer<String> warn) {
    this.mode = Objects.requireNonNull(mode, "mode");
    this.warn = Objects.requireNonNull(warn, "warn");
  }

  /**
   * Starts watching the transaction just begun on this thread (nothing is watched when the
   * transaction manager does not synchronize: its transactions cannot be told apart).
   */
  Watch watch(DataSource inbox) {
    Watch w = new Watch(inbox);
    if (TransactionSynchronizationManager.isSynchronizationActive()) {
      TransactionSynchronizationManager.registerSynchronization(w);
    }
    return w;
  }

  /**
   * Reports what escaped in {@code watch}'s transaction of {@code consumer}'s message.
   *
   * @throws ListenerTransactionEscapedException with {@code fail}, if anything escaped
   */
  void check(String consumer, Watch watch) {
    List<String> escaped = watch.escaped();
    if (escaped.isEmpty()) {
      return;
    }
    String what =
        "listener '"
            + consumer
            + "' wrote outside its effectively-once transaction: "
            + String.join("; ", escaped)
            + ". Those writes commit apart from the message's dedupe record, so a retry or a"
            + " redelivery repeats them; write through the listener's transaction (propagation"
            + " REQUIRED, the inbox's DataSource) or make them idempotent";
    if (mode == PostboxProperties.Consumers.EscapedWrites.FAIL) {
      throw new ListenerTransactionEscapedException(
          what + " (postbox.consumers.escaped-writes: fail)");
    }
    boolean fresh = false;
    for (String kind : escaped) {
      fresh |= warned.add(consumer + '\n' + kind);
    }
    if (fresh) {
      warn.accept(
          what + " (reported once per listener and kind; postbox.consumers.escaped-writes)");
    }
  }

  /** One listener transaction's observations. */
  static final class Watch implements TransactionSynchronization {
    private final DataSource inbox;
    private volatile boolean suspended;

    private Watch(DataSource inbox) {
      this.inbox = inbox;
    }

    /** Spring suspends the listener's transaction to begin another (or to run without one). */
    @Override
    public void suspend() {
      suspended = true;
    }

    /** What escaped so far: empty when nothing did. */
    List<String> escaped() {
      List<String> out = new ArrayList<>();
      if (suspended) {
        out.add(
            "its transaction was suspended while the handler ran (a @Transactional method or"
                + " TransactionTemplate with propagation REQUIRES_NEW or NOT_SUPPORTED)");
      }
      other().ifPresent(ds -> out.add("it used another DataSource (" + ds + ")"));
      return out;
    }

    /** A DataSource other than the inbox's whose connection Spring bound to this thread. */
    private Optional<Object> other() {
      Object ours = TransactionSynchronizationManager.getResource(inbox);
      for (Map.Entry<Object, Object> e :
          TransactionSynchronizationManager.getResourceMap().entrySet()) {
        if (e.getValue() instanceof ConnectionHolder && e.getValue() != ours) {
          return Optional.of(e.getKey());
        }
      }
      return Optional.empty();
    }
  }
}
