package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.jdbc.TransactionRunner;
import dev.postbox.testkit.PostboxTestContext;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The listener's transaction notices writes that commit apart from it, on the test kit's PostgreSQL
 * with Spring's own {@link DataSourceTransactionManager}: a {@code REQUIRES_NEW} or {@code
 * NOT_SUPPORTED} transaction inside the handler and {@code JdbcTemplate} on a second {@code
 * DataSource} are reported (once per listener, naming it; or failing the attempt), while joining
 * ({@code REQUIRED}) and savepoints ({@code NESTED}) are not.
 */
class EscapedWritesIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-escaped-writes");
  static DataSource inbox;
  static DataSource other;
  static DataSourceTransactionManager manager;
  static JdbcTemplate jdbc;
  final List<String> warnings = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void schema() {
    inbox = CTX.dataSource();
    other = CTX.newDataSource(2);
    manager = new DataSourceTransactionManager(inbox);
    jdbc = new JdbcTemplate(inbox);
    jdbc.execute("CREATE TABLE effects (label text NOT NULL)");
  }

  @AfterAll
  static void close() {
    CTX.close();
  }

  private TransactionRunner runner(
      PostboxProperties.Consumers.EscapedWrites mode, String consumer) {
    return new SpringTransactionRunner(manager, inbox, new EscapedWrites(mode, warnings::add))
        .forConsumer(consumer);
  }

  private TransactionRunner warning(String consumer) {
    return runner(PostboxProperties.Consumers.EscapedWrites.WARN, consumer);
  }

  /** Runs {@code handler} as a listener's handler: in the runner's transaction, committing. */
  private static void handle(TransactionRunner runner, Runnable handler) throws Exception {
    runner.inTransaction(
        "a message",
        c -> {
          handler.run();
          return new TransactionRunner.Step<>(null, true);
        });
  }

  private static void insert(String label) {
    jdbc.update("INSERT INTO effects (label) VALUES (?)", label);
  }

  private static void inTransaction(int propagation, Runnable work) {
    TransactionTemplate t = new TransactionTemplate(manager);
    t.setPropagationBehavior(propagation);
    t.executeWithoutResult(s -> work.run());
  }

  private static long effects(String label) {
    return jdbc.queryForObject("SELECT count(*) FROM effects WHERE label = ?", Long.class, label);
  }

  @Test
  void joiningAndSavepointsStayInsideAndAreNotReported() throws Exception {
    handle(
        warning("joins"),
        () -> {
          insert("joined");
          inTransaction(TransactionDefinition.PROPAGATION_REQUIRED, () -> insert("joined"));
          inTransaction(TransactionDefinition.PROPAGATION_NESTED, () -> insert("joined"));
        });
    assertThat(effects("joined")).isEqualTo(3);
    assertThat(warnings).isEmpty();
  }

  @Test
  void aRequiresNewTransactionIsReportedOncePerListenerNamingIt() throws Exception {
    TransactionRunner runner = warning("shipping-requires-new");
    Runnable handler =
        () -> inTransaction(TransactionDefinition.PROPAGATION_REQUIRES_NEW, () -> insert("new"));
    handle(runner, handler);
    handle(runner, handler);
    assertThat(effects("new")).as("warn applies the message: the escaped write stays").isEqualTo(2);
    assertThat(warnings).hasSize(1);
    assertThat(warnings.get(0))
        .contains("listener 'shipping-requires-new'", "REQUIRES_NEW", "suspended");

    handle(
        warning("shipping-not-supported"),
        () -> inTransaction(TransactionDefinition.PROPAGATION_NOT_SUPPORTED, () -> insert("none")));
    assertThat(warnings).hasSize(2);
    assertThat(warnings.get(1)).contains("listener 'shipping-not-supported'");
  }

  @Test
  void aJdbcTemplateOnAnotherDataSourceIsReported() throws Exception {
    JdbcTemplate elsewhere = new JdbcTemplate(other);
    handle(
        warning("shipping-other-ds"),
        () -> elsewhere.update("INSERT INTO effects (label) VALUES ('elsewhere')"));
    assertThat(warnings).hasSize(1);
    assertThat(warnings.get(0))
        .contains("listener 'shipping-other-ds'", "another DataSource", other.toString());
  }

  @Test
  void failRollsTheAttemptBackWithAPermanentFailure() {
    TransactionRunner runner =
        runner(PostboxProperties.Consumers.EscapedWrites.FAIL, "shipping-strict");
    assertThatThrownBy(() ->
            handle(
                runner,
                () -> {
                  insert("strict-inside");
                  inTransaction(
                      TransactionDefinition.PROPAGATION_REQUIRES_NEW,
                      () -> insert("strict-escaped"));
                }))
        .isInstanceOf(ListenerTransactionEscapedException.class)
        .isInstanceOf(dev.postbox.core.PermanentMessageException.class)
        .hasMessageContaining("listener 'shipping-strict'");
    assertThat(effects("strict-inside")).as("rolled back with the attempt").isZero();
    assertThat(effects("strict-escaped")).as("committed on its own, once").isEqualTo(1);
    assertThat(warnings).isEmpty();
  }
}
