package dev.postbox.cli;

import dev.postbox.admin.PostboxAdmin;
import dev.postbox.kafka.KafkaDeadLetters;
import dev.postbox.rabbitmq.RabbitDeadLetters;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The connection options of the operations commands (dlq, parked, outbox, relay, lag), each with an
 * environment variable as its default, so an operator sets them once per shell.
 */
final class AdminOptions {

  /** The variable read for the password when {@code --password-env} is not given. */
  static final String PASSWORD_VARIABLE = "POSTBOX_PG_PASSWORD";

  @Spec(Spec.Target.MIXEE)
  CommandSpec command;

  @Option(
      names = "--pg-url",
      defaultValue = "${env:POSTBOX_PG_URL}",
      description =
          "The database, for example jdbc:postgresql://localhost:5432/shop (postgresql://... also"
              + " works; default: $POSTBOX_PG_URL).")
  String pgUrl;

  @Option(
      names = "--schema",
      defaultValue = "${env:POSTBOX_PG_SCHEMA}",
      description =
          "Schema of the postbox_* tables (default: $POSTBOX_PG_SCHEMA, else the connection's).")
  String schema;

  @Option(
      names = "--user",
      defaultValue = "${env:POSTBOX_PG_USER}",
      description = "Database user (default: $POSTBOX_PG_USER, else from the URL).")
  String user;

  @Option(
      names = "--password-env",
      description =
          "Name of the environment variable holding the password (default: "
              + PASSWORD_VARIABLE
              + " when set).")
  String passwordEnv;

  /** The data source these options name. */
  DataSource dataSource() {
    if (pgUrl == null || pgUrl.isBlank()) {
      throw new picocli.CommandLine.ParameterException(
          command.commandLine(), "give the database with --pg-url or $POSTBOX_PG_URL");
    }
    String variable =
        passwordEnv != null
            ? passwordEnv
            : (System.getenv(PASSWORD_VARIABLE) != null ? PASSWORD_VARIABLE : null);
    DataSource ds = Databases.dataSource(pgUrl, user, variable, command.commandLine());
    if (schema != null && !schema.isBlank()) {
      ((PGSimpleDataSource) ds).setCurrentSchema(schema);
    }
    return ds;
  }

  /** The operations API on that database, reading Kafka dead letters back into messages. */
  PostboxAdmin admin(double ratePerSecond) {
    return PostboxAdmin.builder(dataSource())
        .decoder(RabbitDeadLetters.decoderOr(KafkaDeadLetters.decoder()))
        .ratePerSecond(ratePerSecond)
        .build();
  }

  PostboxAdmin admin() {
    return admin(dev.postbox.jdbc.Replayer.DEFAULT_RATE_PER_SECOND);
  }
}
