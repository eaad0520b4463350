package dev.postbox.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.time.FakeTime;
import java.lang.reflect.Proxy;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The work notifier's polling waits, on fake time: without notifications, or while it cannot
 * LISTEN, a wait for work is one sleep of the poll interval on the injected sleeper. No database.
 */
class PostgresWorkNotifierTest {

  private final FakeTime time = FakeTime.create();

  @Test
  void withoutNotificationsAWaitIsOneSleepOfTheTimeout() throws Exception {
    PostgresWorkNotifier notifier = new PostgresWorkNotifier(unreachable(), false, time, time);
    assertThat(notifier.awaitWork(Duration.ofSeconds(1))).isFalse();
    assertThat(time.sleeps()).containsExactly(Duration.ofSeconds(1));
  }

  @Test
  void whenItCannotListenItPollsOnTheSleeper() throws Exception {
    PostgresWorkNotifier notifier = new PostgresWorkNotifier(unreachable(), true, time, time);
    assertThat(notifier.awaitWork(Duration.ofMillis(250))).isFalse();
    assertThat(notifier.awaitWork(Duration.ofMillis(250))).isFalse();
    assertThat(time.sleeps()).containsExactly(Duration.ofMillis(250), Duration.ofMillis(250));
  }

  /** A data source whose every connection attempt fails. */
  private static DataSource unreachable() {
    return (DataSource)
        Proxy.newProxyInstance(
            DataSource.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
              if (method.getName().equals("getConnection")) {
                throw new SQLException("connection refused", "08001");
              }
              throw new UnsupportedOperationException(method.getName());
            });
  }
}
