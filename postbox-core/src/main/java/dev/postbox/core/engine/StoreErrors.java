package dev.postbox.core.engine;

import java.sql.SQLException;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Classifies a store write's failure by the SQLSTATE of the {@link SQLException} in its cause
 * chain: whether writing the same row again can ever succeed.
 *
 * <ul>
 *   <li><b>Permanent</b> (the same row is refused every time): class {@code 22} (data exceptions:
 *       {@code 22021} a NUL or an invalid byte sequence in text, {@code 22P05} an untranslatable
 *       character, {@code 22001} too long, ...), class {@code 23} (integrity violations) except
 *       {@code 23505} (a unique conflict, which the stores expect and answer themselves), and class
 *       {@code 54} (program limits: {@code 54000} an index row larger than a btree page, for a huge
 *       key).
 *   <li><b>Transient</b>: everything else, among them class {@code 08} (connection), {@code 40001}
 *       and {@code 40P01} (serialization failure, deadlock), class {@code 53} (insufficient
 *       resources), class {@code 57} ({@code 57P01} admin shutdown, cancelled), a missing table
 *       (the operator runs the migrations) and failures without a SQLSTATE (an unreachable pool):
 *       retried as before.
 * </ul>
 */
final class StoreErrors {

  /** How a store write failed. */
  enum Kind {
    TRANSIENT,
    PERMANENT
  }

  /** How many chained ({@link SQLException#getNextException}) exceptions are looked at. */
  private static final int MAX_CHAINED = 16;

  private StoreErrors() {}

  /** The kind of {@code error}'s failure. */
  static Kind classify(Throwable error) {
    return sqlState(error).map(StoreErrors::classify).orElse(Kind.TRANSIENT);
  }

  /** The kind of a failure with SQLSTATE {@code state}. */
  static Kind classify(String state) {
    if (state.length() != 5) {
      return Kind.TRANSIENT;
    }
    String cls = state.substring(0, 2);
    return switch (cls) {
      case "22", "54" -> Kind.PERMANENT;
      case "23" -> state.equals("23505") ? Kind.TRANSIENT : Kind.PERMANENT;
      default -> Kind.TRANSIENT;
    };
  }

  /** The SQLSTATE of the first {@link SQLException} in {@code error}'s cause chain that has one. */
  static Optional<String> sqlState(Throwable error) {
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    for (Throwable t = error; t != null && seen.put(t, true) == null; t = t.getCause()) {
      if (t instanceof SQLException sql) {
        SQLException s = sql;
        for (int i = 0; s != null && i < MAX_CHAINED; i++, s = s.getNextException()) {
          if (s.getSQLState() != null) {
            return Optional.of(s.getSQLState());
          }
        }
      }
    }
    return Optional.empty();
  }
}
