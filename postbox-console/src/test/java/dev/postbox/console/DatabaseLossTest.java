package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.PostboxException;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A query that fails because the database went away on a connection the pool had already handed out
 * (the pool never saw it) opens the database's circuit, so that page and the next show the
 * "database unreachable" banner at once. A CI run's ConsoleBadDayIT got a bare 503 on the first
 * page after the database stopped: an idle pooled connection was taken and failed mid-query.
 */
class DatabaseLossTest {

  private static PostboxException failure(String sqlState) {
    return new PostboxException(
        "reading the Postbox tables for metrics failed",
        new SQLException("terminating connection due to administrator command", sqlState)) {};
  }

  @Test
  void connectionAndShutdownStatesAreALostDatabaseOtherErrorsAreNot() {
    assertThat(ErrorAdvice.lostTheDatabase(failure("57P01"))).isTrue();
    assertThat(ErrorAdvice.lostTheDatabase(failure("08006"))).isTrue();
    assertThat(ErrorAdvice.lostTheDatabase(failure("23505"))).isFalse();
    assertThat(ErrorAdvice.lostTheDatabase(failure("42P01"))).isFalse();
    assertThat(ErrorAdvice.lostTheDatabase(new IllegalStateException("no SQL"))).isFalse();
  }

  @Test
  void aFailureSeenOutsideTheCircuitOpensIt() {
    Dependency database = new Dependency("database", Duration.ofSeconds(5), Clock.systemUTC());
    assertThat(database.isDown()).isFalse();
    database.failed(failure("57P01"));
    assertThat(database.isDown()).isTrue();
    assertThat(database.lastError()).contains("terminating connection");
  }
}
