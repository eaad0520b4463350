package dev.postbox.cli;

import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import picocli.CommandLine;

/** The database of a command, from its URL, user and password variable options. */
final class Databases {

  private Databases() {}

  /**
   * A data source for {@code url} ({@code jdbc:postgresql://...}, or {@code postgresql://...} which
   * gets the {@code jdbc:} prefix), with {@code user} if set and the password from the environment
   * variable {@code passwordEnv} if set.
   *
   * @throws CommandLine.ParameterException if the password variable is not set
   */
  static DataSource dataSource(String url, String user, String passwordEnv, CommandLine command) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setUrl(
        url.startsWith("postgres")
            ? "jdbc:" + url.replaceFirst("^postgres(ql)?:", "postgresql:")
            : url);
    if (user != null) {
      ds.setUser(user);
    }
    if (passwordEnv != null) {
      String pw = System.getenv(passwordEnv);
      if (pw == null) {
        throw new CommandLine.ParameterException(
            command, "environment variable " + passwordEnv + " is not set");
      }
      ds.setPassword(pw);
    }
    return ds;
  }
}
