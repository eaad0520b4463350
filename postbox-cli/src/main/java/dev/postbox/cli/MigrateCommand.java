package dev.postbox.cli;

import dev.postbox.jdbc.PostboxMigrations;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code postbox migrate}: creates or upgrades Postbox's tables in a database. */
@Command(
    name = "migrate",
    mixinStandardHelpOptions = true,
    description =
        "Creates or upgrades the postbox_* tables (Flyway, history in postbox_schema_history) in the"
            + " current schema of the given PostgreSQL database; prints how many migrations ran.")
final class MigrateCommand implements Callable<Integer> {
  @Option(
      names = "--jdbc-url",
      required = true,
      description = "For example jdbc:postgresql://localhost:5432/shop?currentSchema=orders")
  String jdbcUrl;

  @CommandLine.Mixin DatabaseLogin login = new DatabaseLogin();

  @Option(names = "--print-sql", description = "Print the SQL scripts instead of applying them.")
  boolean printSql;

  @Override
  public Integer call() {
    if (printSql) {
      for (var script : PostboxMigrations.scripts()) {
        System.out.println("-- " + script.name());
        System.out.println(script.sql());
      }
      return 0;
    }
    DataSource ds = login.dataSource(jdbcUrl);
    int applied = PostboxMigrations.migrate(ds);
    System.out.println("applied " + applied + " migration(s)");
    return 0;
  }
}
