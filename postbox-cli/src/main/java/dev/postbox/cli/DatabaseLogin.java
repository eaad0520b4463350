package dev.postbox.cli;

import javax.sql.DataSource;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The login options every command that opens the database shares ({@code --user}, {@code
 * --password-env}), as a picocli mixin. The URL option stays on each command (its name is part of
 * that command's published interface).
 */
final class DatabaseLogin {

  @Spec(Spec.Target.MIXEE)
  CommandSpec command;

  @Option(names = "--user", description = "Database user (default: from the URL).")
  String user;

  @Option(
      names = "--password-env",
      description = "Name of the environment variable holding the password.")
  String passwordEnv;

  /**
   * A data source for {@code url} with these options; bad input is a usage error of the command.
   */
  DataSource dataSource(String url) {
    return Databases.dataSource(url, user, passwordEnv, command.commandLine());
  }
}
