package dev.postbox.verify;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The harness's own tables, created by the harness in the campaign's schema (not Postbox tables: no
 * migration). {@code verify_effect} deliberately has no unique constraint on the message id, so a
 * second effect of a message stays visible.
 */
final class HarnessSchema {

  private HarnessSchema() {}

  /** Creates the tables and {@code keys} producer keys. */
  static void create(DataSource ds, int keys) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement()) {
      st.execute("CREATE TABLE verify_keys (key text PRIMARY KEY, seq bigint NOT NULL DEFAULT 0)");
      st.execute(
          "CREATE TABLE verify_business (message_id uuid PRIMARY KEY, key text NOT NULL, seq bigint"
              + " NOT NULL, phase int NOT NULL, producer text NOT NULL, committed_at timestamptz"
              + " NOT NULL DEFAULT clock_timestamp())");
      st.execute(
          "CREATE TABLE verify_rolled_back (message_id uuid PRIMARY KEY, key text NOT NULL, phase"
              + " int NOT NULL)");
      st.execute(
          "CREATE TABLE verify_effect (id bigserial PRIMARY KEY, message_id uuid NOT NULL, key text"
              + " NOT NULL, seq bigint NOT NULL, instance text NOT NULL, part int NOT NULL, off"
              + " bigint NOT NULL, applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
      st.execute("CREATE INDEX verify_effect_message ON verify_effect (message_id)");
      st.execute(
          "CREATE TABLE verify_assignment (id bigserial PRIMARY KEY, instance text NOT NULL, part"
              + " int NOT NULL, generation int NOT NULL DEFAULT -1, assigned_at timestamptz NOT NULL"
              + " DEFAULT clock_timestamp())");
      st.execute(
          "INSERT INTO verify_keys (key) SELECT 'key-' || lpad(i::text, 4, '0') FROM"
              + " generate_series(0, "
              + (keys - 1)
              + ") i");
    }
  }
}
