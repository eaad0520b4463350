package dev.postbox.verify;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.util.concurrent.CountDownLatch;

/** What the harness's child processes share: their connection pool and their way of stopping. */
final class ChildSupport {

  /** Every child's sessions carry this application name prefix (for pg_terminate_backend). */
  static final String APPLICATION_PREFIX = "verify-";

  private ChildSupport() {}

  /**
   * A small pool whose sessions are named {@code verify-<name>}; {@code initSql} runs on each new
   * connection (may be empty).
   */
  static HikariDataSource dataSource(String jdbcUrl, String name, int size, String initSql) {
    HikariConfig hc = new HikariConfig();
    // PostgreSQL's default, named: left to detection, a pool whose first connection meets a
    // database
    // restart keeps isolation -1 and refuses every later connection (HikariCP #1944)
    hc.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    hc.setJdbcUrl(jdbcUrl);
    hc.setMaximumPoolSize(size);
    hc.setMinimumIdle(1);
    hc.setPoolName(APPLICATION_PREFIX + name);
    // 15 s, not 5: on a saturated 2-core machine (load 40-50) opening one PostgreSQL session took
    // 5.2 s (psql), and every child failed at start-up before it could do any work
    hc.setConnectionTimeout(15_000);
    hc.setInitializationFailTimeout(-1); // start even while PostgreSQL restarts
    hc.addDataSourceProperty("ApplicationName", APPLICATION_PREFIX + name);
    hc.addDataSourceProperty("tcpKeepAlive", "true");
    if (!initSql.isEmpty()) {
      hc.setConnectionInitSql(initSql);
    }
    return new HikariDataSource(hc);
  }

  /**
   * Runs {@code onStop} on SIGTERM and blocks until then (a crash point or {@code kill -9} ends the
   * JVM without it).
   */
  static void runUntilTerminated(Runnable onStop) throws InterruptedException {
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> {
              try {
                onStop.run();
              } finally {
                stopped.countDown();
              }
            }));
    stopped.await();
  }
}
