package dev.postbox.testkit.internal;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * The current primary of a {@link dev.postbox.testkit.PostgresPair}: a multi-host JDBC URL with
 * {@code targetServerType=primary}, so that pgjdbc connects to whichever server accepts writes.
 * {@code hostRecheckSeconds=1}: pgjdbc remembers a server it found to be a standby for that long,
 * so a promoted standby is tried again within a second rather than pgjdbc's default 10.
 */
final class CurrentPrimaryServer extends AbstractPostgresServer {

  private final String url;
  private final String user;

  CurrentPrimaryServer(int primaryPort, int standbyPort, String database, String user) {
    this.url =
        "jdbc:postgresql://127.0.0.1:"
            + primaryPort
            + ",127.0.0.1:"
            + standbyPort
            + "/"
            + database
            + "?targetServerType=primary&hostRecheckSeconds=1";
    this.user = user;
  }

  @Override
  String baseUrl() {
    return url;
  }

  @Override
  public boolean isExternal() {
    return false;
  }

  @Override
  public void start() {
    throw unsupported();
  }

  @Override
  public void stop() {
    throw unsupported();
  }

  @Override
  public void restart() {
    throw unsupported();
  }

  @Override
  public void crash() {
    throw unsupported();
  }

  @Override
  public boolean isRunning() {
    return true;
  }

  @Override
  public String user() {
    return user;
  }

  @Override
  public Optional<String> password() {
    return Optional.empty();
  }

  @Override
  public Optional<Path> dataDirectory() {
    return Optional.empty();
  }

  @Override
  public Optional<Duration> lastStartupTime() {
    return Optional.empty();
  }

  @Override
  public void close() {}

  private static UnsupportedOperationException unsupported() {
    return new UnsupportedOperationException(
        "the current primary of a pair has no lifecycle: use PostgresPair's methods");
  }

  @Override
  public String toString() {
    return "PostgresServer[current primary " + url + "]";
  }
}
