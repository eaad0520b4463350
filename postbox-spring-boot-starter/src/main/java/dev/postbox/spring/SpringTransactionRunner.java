package dev.postbox.spring;

import dev.postbox.jdbc.InboxException;
import dev.postbox.jdbc.TransactionRunner;
import java.sql.Connection;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs the inbox's transaction of an effectively-once listener through the application's {@link
 * PlatformTransactionManager} ({@code DataSourceTransactionManager}, {@code JpaTransactionManager},
 * ...), on the connection that manager binds for the application's {@code DataSource}: the dedupe
 * row, and whatever the handler writes through Spring ({@code JdbcTemplate}, {@code JdbcClient},
 * Spring Data repositories, {@code @Transactional} services that join), commit or roll back
 * together, on one connection.
 *
 * <p>Each message gets a new transaction ({@code REQUIRES_NEW}: a listener's thread has none). A
 * manager that binds no connection for the inbox's {@code DataSource} (it manages another one) is
 * refused, at start-up by {@link #requireSharedDataSource()} and again in every transaction, since
 * the handler's writes would escape the dedupe transaction. Writes that escape it inside the
 * handler ({@code REQUIRES_NEW}, another {@code DataSource}) are reported by {@link EscapedWrites}
 * under the consumer's name ({@link #forConsumer}).
 */
final class SpringTransactionRunner {

  private static final Logger log = LoggerFactory.getLogger(SpringTransactionRunner.class);

  private final PlatformTransactionManager transactionManager;
  private final DataSource dataSource;
  private final DefaultTransactionDefinition definition;
  private final EscapedWrites escapes;

  SpringTransactionRunner(
      PlatformTransactionManager transactionManager, DataSource dataSource, EscapedWrites escapes) {
    this.transactionManager = Objects.requireNonNull(transactionManager, "transactionManager");
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.escapes = Objects.requireNonNull(escapes, "escapes");
    this.definition =
        new DefaultTransactionDefinition(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
    definition.setName("postbox inbox");
  }

  /**
   * The inbox's transaction runner for {@code consumer}'s messages: writes that escape the
   * transaction ({@link EscapedWrites}) are reported under its name.
   */
  TransactionRunner forConsumer(String consumer) {
    Objects.requireNonNull(consumer, "consumer");
    return new TransactionRunner() {
      @Override
      public <T> T inTransaction(String what, Body<T> body) throws Exception {
        return run(consumer, what, body);
      }
    };
  }

  private <T> T run(String consumer, String what, TransactionRunner.Body<T> body) throws Exception {
    TransactionStatus status;
    try {
      status = transactionManager.getTransaction(definition);
    } catch (RuntimeException e) {
      throw new InboxException("cannot begin the transaction to process " + what, e);
    }
    TransactionRunner.Step<T> step;
    try {
      requireBoundConnection();
      EscapedWrites.Watch watch = escapes.watch(dataSource);
      Connection c = DataSourceUtils.getConnection(dataSource);
      try {
        step = body.run(c);
      } finally {
        DataSourceUtils.releaseConnection(c, dataSource);
      }
      if (step.commit()) {
        escapes.check(consumer, watch); // with fail: throws, and the transaction rolls back
      }
    } catch (Throwable t) {
      rollback(status, t);
      throw t;
    }
    if (!step.commit()) {
      // nothing was written, so the answer stands even if the rollback fails
      try {
        transactionManager.rollback(status);
      } catch (RuntimeException e) {
        log.warn("rolling back {} without committing failed", what, e);
      }
      return step.value();
    }
    try {
      // a participant that failed (a nested @Transactional whose exception the handler caught)
      // left the transaction rollback-only: the commit then rolls back and throws, and the
      // message is not recorded as processed
      transactionManager.commit(status);
    } catch (RuntimeException e) {
      throw new InboxException(
          "committing "
              + what
              + " failed; if the commit did happen anyway, a redelivery is a duplicate",
          e);
    }
    return step.value();
  }

  private void rollback(TransactionStatus status, Throwable cause) {
    try {
      transactionManager.rollback(status);
    } catch (RuntimeException e) {
      cause.addSuppressed(e);
    }
  }

  /**
   * Begins and rolls back one transaction to check that the manager binds a connection for the
   * inbox's {@code DataSource}.
   *
   * @throws PostboxConfigurationException if it does not
   */
  void requireSharedDataSource() {
    TransactionStatus status = transactionManager.getTransaction(definition);
    try {
      requireBoundConnection();
    } finally {
      transactionManager.rollback(status);
    }
  }

  private void requireBoundConnection() {
    if (!(TransactionSynchronizationManager.getResource(dataSource) instanceof ConnectionHolder)) {
      throw new PostboxConfigurationException(
          List.of(
              "the transaction manager "
                  + transactionManager.getClass().getName()
                  + " does not manage the DataSource the effectively-once listeners' inbox"
                  + " uses ("
                  + dataSource
                  + "): what a handler writes through Spring would commit apart from its"
                  + " dedupe record; give the listeners the transaction manager of that"
                  + " DataSource (postbox.consumers.transaction-manager)"));
    }
  }
}
