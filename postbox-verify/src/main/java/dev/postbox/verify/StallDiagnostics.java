package dev.postbox.verify;

import dev.postbox.verify.Fleet.Child;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * What the harness records when a phase ends with (almost) no business transaction committed: each
 * producer process (alive, past its start-up, the last lines of its log) and every database session
 * of the campaign's processes that is not idle (state, what it waits for, which sessions block it,
 * how old its transaction is, its query). A phase like that is inconclusive, and without these
 * lines a CI run's report said only that nothing committed, not why.
 */
final class StallDiagnostics {

  // the sessions of the children (ChildSupport's application names) that are not simply idle
  private static final String SESSIONS =
      "SELECT pid, application_name, state, coalesce(wait_event_type || ':' || wait_event, '-'),"
          + " pg_blocking_pids(pid)::text,"
          + " coalesce(extract(epoch FROM now() - xact_start)::int::text, '-'),"
          + " left(regexp_replace(query, '\\s+', ' ', 'g'), 120)"
          + " FROM pg_stat_activity WHERE application_name LIKE '"
          + ChildSupport.APPLICATION_PREFIX
          + "%' AND state IS DISTINCT FROM 'idle' ORDER BY xact_start NULLS LAST";

  private StallDiagnostics() {}

  /** Lines describing {@code producers} and the campaign's busy database sessions. */
  static List<String> describe(List<Child> producers, DataSource ds) {
    List<String> lines = new ArrayList<>();
    for (Child p : producers) {
      lines.add(
          "producer "
              + p.instance()
              + (p.alive() ? " alive" : " not alive")
              + (p.working() ? ", started" : ", not started")
              + (p.paused() ? ", paused" : "")
              + "; its log ends with:");
      p.logTail(8).lines().forEach(l -> lines.add("    " + l));
    }
    lines.addAll(sessions(ds));
    return lines;
  }

  /** One line per busy session of the campaign's processes; one line if there is none. */
  static List<String> sessions(DataSource ds) {
    List<String> lines = new ArrayList<>();
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement()) {
      st.setQueryTimeout(10);
      try (ResultSet rs = st.executeQuery(SESSIONS)) {
        while (rs.next()) {
          lines.add(
              "session "
                  + rs.getInt(1)
                  + " "
                  + rs.getString(2)
                  + " "
                  + rs.getString(3)
                  + " waits "
                  + rs.getString(4)
                  + " blocked by "
                  + rs.getString(5)
                  + " xact "
                  + rs.getString(6)
                  + " s: "
                  + rs.getString(7));
        }
      }
      if (lines.isEmpty()) {
        lines.add("no session of the campaign's processes is busy");
      }
    } catch (Exception e) {
      lines.add("sessions not described (" + e + ")");
    }
    return lines;
  }
}
