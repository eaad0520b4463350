package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.engine.StoreErrors.Kind;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Which SQLSTATEs make a store write permanent (never retried) and which are retried. */
class StoreErrorsTest {

  @ParameterizedTest(name = "{0} ({2}) is {1}")
  @CsvSource({
    // data exceptions: the same row is refused every time
    "22021, PERMANENT, invalid byte sequence (a NUL in text)",
    "22P05, PERMANENT, untranslatable character",
    "22001, PERMANENT, string data right truncation",
    "22P02, PERMANENT, invalid text representation",
    // integrity violations, except the unique conflicts the stores expect
    "23502, PERMANENT, not null violation",
    "23514, PERMANENT, check violation",
    "23503, PERMANENT, foreign key violation",
    "23505, TRANSIENT, unique violation (expected, answered by the stores)",
    // program limits: a row too large for its index
    "54000, PERMANENT, index row size exceeds the maximum",
    // transient: a retry can succeed
    "08006, TRANSIENT, connection failure",
    "08001, TRANSIENT, cannot connect",
    "40001, TRANSIENT, serialization failure",
    "40P01, TRANSIENT, deadlock detected",
    "57P01, TRANSIENT, admin shutdown",
    "57014, TRANSIENT, query canceled",
    "53300, TRANSIENT, too many connections",
    "53100, TRANSIENT, disk full",
    "42P01, TRANSIENT, undefined table (the operator migrates)",
    "XX000, TRANSIENT, internal error",
    "2200, TRANSIENT, not a SQLSTATE",
  })
  void classifiesBySqlState(String state, Kind kind, String what) {
    assertThat(StoreErrors.classify(state)).as(what).isEqualTo(kind);
    assertThat(StoreErrors.classify(new SQLException(what, state))).isEqualTo(kind);
  }

  @Test
  void findsTheSqlStateAnywhereInTheCauseChain() {
    SQLException sql = new SQLException("invalid byte sequence for encoding UTF8: 0x00", "22021");
    RuntimeException wrapped =
        new IllegalStateException("storing the dead letter failed", new RuntimeException(sql));

    assertThat(StoreErrors.sqlState(wrapped)).contains("22021");
    assertThat(StoreErrors.classify(wrapped)).isEqualTo(Kind.PERMANENT);
  }

  @Test
  void readsTheFirstChainedExceptionWithAState() {
    SQLException batch = new SQLException("batch entry 0 failed"); // no state of its own
    batch.setNextException(new SQLException("value too long", "22001"));

    assertThat(StoreErrors.classify(new RuntimeException(batch))).isEqualTo(Kind.PERMANENT);
  }

  @Test
  void aFailureWithoutASqlStateIsTransient() {
    assertThat(StoreErrors.classify(new IllegalStateException("pool exhausted")))
        .isEqualTo(Kind.TRANSIENT);
    assertThat(StoreErrors.classify(new SQLTransientConnectionException("timeout")))
        .isEqualTo(Kind.TRANSIENT);
  }

  @Test
  void aCauseCycleEnds() {
    RuntimeException a = new RuntimeException("a");
    RuntimeException b = new RuntimeException("b", a);
    a.initCause(b);

    assertThat(StoreErrors.classify(a)).isEqualTo(Kind.TRANSIENT);
  }
}
