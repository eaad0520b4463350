package dev.postbox.verify;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The harness's own tables, created by the harness in the campaign's schema (not Postbox tables: no
 * migration). {@code verify_effect} deliberately has no unique constraint on the message id, so a
 * second effect of a message stays visible. {@code verify_parking} is written by a trigger on
 * {@code postbox_parked} (so the Postbox migrations must have run first): one row per record parked
 * and per record that left the parking. {@code verify_control} holds the switch of the consumers'
 * transient failures (the parking scenario).
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
          "CREATE TABLE verify_parking (id bigserial PRIMARY KEY, parked_id bigint NOT NULL, event"
              + " text NOT NULL, part int NOT NULL, off bigint NOT NULL, at timestamptz NOT NULL"
              + " DEFAULT clock_timestamp())");
      st.execute(
          "CREATE FUNCTION verify_parking_log() RETURNS trigger LANGUAGE plpgsql SET search_path"
              + " FROM CURRENT AS $$ BEGIN IF TG_OP = 'INSERT' THEN INSERT INTO verify_parking"
              + " (parked_id, event, part, off) VALUES (NEW.id, 'parked', NEW.partition,"
              + " NEW.\"offset\"); ELSE INSERT INTO verify_parking (parked_id, event, part, off)"
              + " VALUES (OLD.id, 'unparked', OLD.partition, OLD.\"offset\"); END IF; RETURN"
              + " NULL; END $$");
      st.execute(
          "CREATE TRIGGER verify_parking_log AFTER INSERT OR DELETE ON postbox_parked FOR EACH ROW"
              + " EXECUTE FUNCTION verify_parking_log()");
      st.execute(
          "CREATE TABLE verify_control (id int PRIMARY KEY CHECK (id = 1), failing boolean NOT"
              + " NULL)");
      st.execute("INSERT INTO verify_control VALUES (1, false)");
      st.execute(
          "INSERT INTO verify_keys (key) SELECT 'key-' || lpad(i::text, 4, '0') FROM"
              + " generate_series(0, "
              + (keys - 1)
              + ") i");
    }
  }
}
