package dev.postbox.testkit.internal;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/** A PostgreSQL server that runs elsewhere: usable, not controllable. Thread-safe. */
public final class ExternalPostgresServer extends AbstractPostgresServer {

  private final String url;
  private final String user;
  private final Optional<String> password;

  public ExternalPostgresServer(String url, Optional<String> user, Optional<String> password) {
    if (Objects.requireNonNull(url, "url").isBlank() || !url.startsWith("jdbc:postgresql:")) {
      throw new IllegalArgumentException("not a PostgreSQL JDBC URL: " + url);
    }
    this.url = url.trim();
    this.user =
        user.filter(u -> !u.isBlank())
            .or(() -> urlParam(this.url, "user"))
            .orElse(System.getProperty("user.name"));
    this.password = password.filter(p -> !p.isEmpty());
  }

  /** The decoded value of query parameter {@code name} in {@code url}. */
  static Optional<String> urlParam(String url, String name) {
    int q = url.indexOf('?');
    if (q < 0) {
      return Optional.empty();
    }
    for (String pair : url.substring(q + 1).split("&")) {
      int eq = pair.indexOf('=');
      if (eq > 0 && pair.substring(0, eq).equals(name)) {
        return Optional.of(
            java.net.URLDecoder.decode(
                pair.substring(eq + 1), java.nio.charset.StandardCharsets.UTF_8));
      }
    }
    return Optional.empty();
  }

  @Override
  String baseUrl() {
    return url;
  }

  @Override
  public String jdbcUrl() {
    // Credentials already in the URL win; add ours only if absent.
    String u = url;
    if (urlParam(u, "user").isEmpty()) {
      u = withParam(u, "user", user);
    }
    if (password.isPresent() && urlParam(u, "password").isEmpty()) {
      u = withParam(u, "password", password.get());
    }
    return u;
  }

  @Override
  public boolean isExternal() {
    return true;
  }

  @Override
  public void start() {}

  @Override
  public void stop() {
    throw unsupported("stop");
  }

  @Override
  public void restart() {
    throw unsupported("restart");
  }

  @Override
  public void crash() {
    throw unsupported("crash");
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
    return password;
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

  @Override
  public String toString() {
    return "PostgresServer[external " + url + "]";
  }

  private UnsupportedOperationException unsupported(String operation) {
    return new UnsupportedOperationException(
        "Cannot "
            + operation
            + " the external PostgreSQL server at "
            + url
            + " (POSTBOX_PG_URL is set): only an embedded server can be stopped or restarted."
            + " Unset POSTBOX_PG_URL to run this test.");
  }
}
