package dev.postbox.jdbc.internal;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The output of an {@code EXPLAIN (ANALYZE, TIMING OFF)} statement, and the rows its plan looked at
 * and threw away (the sum of every node's "Rows Removed by Filter" and "by Join Filter"): what the
 * plan tests count instead of timing a statement.
 *
 * @param text the plan, one node line per line
 * @param removed rows looked at and thrown away
 */
public record ExplainedPlan(String text, long removed) {

  private static final Pattern REMOVED =
      Pattern.compile("Rows Removed by (?:Join )?Filter: (\\d+)");

  /** Runs {@code explain} (an {@code EXPLAIN (ANALYZE, TIMING OFF) ...} statement, bound). */
  public static ExplainedPlan of(PreparedStatement explain) throws SQLException {
    StringBuilder text = new StringBuilder();
    long removed = 0;
    try (ResultSet rs = explain.executeQuery()) {
      while (rs.next()) {
        String line = rs.getString(1);
        text.append(line).append('\n');
        Matcher m = REMOVED.matcher(line);
        if (m.find()) {
          removed += Long.parseLong(m.group(1));
        }
      }
    }
    return new ExplainedPlan(text.toString(), removed);
  }
}
