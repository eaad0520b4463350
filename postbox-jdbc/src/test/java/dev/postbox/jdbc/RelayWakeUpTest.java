package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * How an idle relay learns of new outbox rows. Writers notify only while a relay is marked idle
 * (V7, V8); a writer whose insert saw the relay busy, and which commits after the relay marked
 * itself idle, sends no notification: the relay must still wake for it, not wait for the poll
 * interval (seen as a ~1 s p99 in the end-to-end benchmark at 1k events/s).
 */
@PostboxTest
class RelayWakeUpTest {

  // Far longer than any of the waits below: reaching it means the wake-up was missed.
  private static final Duration POLL = Duration.ofMinutes(2);

  @Test
  void aWriterThatSawTheRelayBusyWakesItWhenItCommitsAfterTheIdleMark(PostboxTestContext ctx)
      throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    RelayStore store = PostgresRelayStore.create(ds);
    store.heartbeat("relay-1", Duration.ofSeconds(30));
    store.markIdle("relay-1", false); // draining
    Outbox outbox = Outbox.postgres();
    try (Connection writer = ds.getConnection()) {
      writer.setAutoCommit(false);
      outbox.write(writer, Message.builder("t", "x").key("k").jsonPayload("{}").build());
      store.markIdle("relay-1", true); // the relay's claim found nothing: it waits from now on
      CompletableFuture<Boolean> woken = awaitWorkAsync(store);
      writer.commit(); // no notification: the insert trigger saw the relay busy
      assertThat(woken.get(60, TimeUnit.SECONDS)).as("woken before the poll interval").isTrue();
    }
  }

  @Test
  void aWriterThatSawTheRelayIdleNotifies(PostboxTestContext ctx) throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    RelayStore store = PostgresRelayStore.create(ds);
    store.heartbeat("relay-1", Duration.ofSeconds(30));
    store.markIdle("relay-1", false);
    store.markIdle("relay-1", true);
    CompletableFuture<Boolean> woken = awaitWorkAsync(store);
    Outbox.postgres()
        .inTransaction(
            ds,
            tx -> {
              tx.write(Message.builder("t", "x").key("k").jsonPayload("{}").build());
              return null;
            });
    assertThat(woken.get(60, TimeUnit.SECONDS)).as("notified").isTrue();
  }

  private static CompletableFuture<Boolean> awaitWorkAsync(RelayStore store) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return store.awaitWork(POLL);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    });
  }
}
