package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.InboxStore;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Stored results on the EFFECTIVELY_ONCE path: the handler's recorded result goes to the inbox with
 * the id, {@code completed} hears it after the commit, and a duplicate gets the stored result
 * without the effect running again. The store is an in-memory one following the SPI's contract;
 * PostgreSQL's is tested in postbox-jdbc ({@code InboxStoreTest}).
 */
class StoredResultProcessingTest {

  /** A connection that answers nothing: the in-memory inbox has no database. */
  static final Connection NO_CONNECTION =
      (Connection)
          java.lang.reflect.Proxy.newProxyInstance(
              Connection.class.getClassLoader(),
              new Class<?>[] {Connection.class},
              (proxy, method, args) -> {
                throw new UnsupportedOperationException(method.getName());
              });

  /** The SPI's contract in memory. */
  static class InMemoryInbox implements InboxStore {
    final Map<UUID, Optional<Payload>> rows = new HashMap<>();

    @Override
    public synchronized Processed processOnceWithResult(
        String consumer, UUID messageId, byte[] payloadSha256, ResultWork work) throws Exception {
      if (rows.containsKey(messageId)) {
        return new Processed(Outcome.DUPLICATE, rows.get(messageId));
      }
      Optional<Payload> result = work.run(NO_CONNECTION); // a throw leaves nothing recorded
      rows.put(messageId, result);
      return new Processed(Outcome.APPLIED, result);
    }

    @Override
    public boolean processOnce(String consumer, UUID messageId, Work work) throws Exception {
      throw new UnsupportedOperationException();
    }

    @Override
    public Set<UUID> processBatch(String consumer, List<UUID> messageIds, BatchWork work) {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean advanceVersion(Connection connection, String entity, long version) {
      throw new UnsupportedOperationException();
    }

    @Override
    public int purge(String consumer, Duration age, int limit) {
      return 0;
    }
  }

  record Completed(UUID id, Optional<String> result, boolean duplicate, boolean hasConnection) {}

  private final InMemoryInbox inbox = new InMemoryInbox();
  private final List<Completed> completions = new CopyOnWriteArrayList<>();
  private final AtomicInteger effects = new AtomicInteger();

  private static final Message M = Message.builder("payments", "charge").key("o-1").build();

  private static DeliveryProcessor.Incoming incoming(Message m) {
    return new DeliveryProcessor.Incoming("payments", 0, 7, () -> m, null, new byte[0], List.of());
  }

  private DeliveryProcessor processor(MessageHandler handler, int maxAttempts) {
    Subscription sub =
        Subscription.builder("payments-service")
            .topics("payments")
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .failureHandler(
                FailureHandlers.of(
                    RetryPolicy.builder()
                        .maxAttempts(maxAttempts)
                        .backoff(new Backoff(Duration.ofMillis(1), Duration.ofMillis(2), 2, 0))
                        .build()))
            .build();
    return DeliveryProcessor.builder(EngineTesting.TRANSPORT, sub)
        .handler(handler)
        .inbox(Optional.of(inbox))
        .time(
            Clock.systemUTC(),
            dev.postbox.core.time.Ticker.SYSTEM,
            dev.postbox.core.time.FakeTime.create())
        .metrics(PostboxMetrics.noop())
        .openTelemetry(io.opentelemetry.api.OpenTelemetry.noop())
        .build();
  }

  /** Charges once, records the receipt, and reports what {@code completed} heard. */
  private MessageHandler charging(boolean failFirstCompletion) {
    AtomicInteger completionCalls = new AtomicInteger();
    return new MessageHandler() {
      @Override
      public void handle(Delivery d) {
        effects.incrementAndGet();
        d.recordResult(Payload.json("{\"receipt\":" + effects.get() + "}"));
      }

      @Override
      public void completed(Delivery d, Optional<Payload> result, boolean duplicate) {
        completions.add(
            new Completed(
                d.message().id(),
                result.map(Payload::asString),
                duplicate,
                d.connection().isPresent()));
        if (failFirstCompletion && completionCalls.incrementAndGet() == 1) {
          throw new IllegalStateException("the reply could not be sent");
        }
      }
    };
  }

  @Test
  void aTransactionWhoseOwnershipLapsedBeforeTheCommitIsRolledBackAndLeftToTheNextOwner() {
    DeliveryProcessor p = processor(charging(false), 3);
    AtomicInteger commitChecks = new AtomicInteger();
    Ownership lapsed =
        Ownership.of(
            () -> true,
            () -> {
              commitChecks.incrementAndGet();
              return false; // e.g. a pause past the session timeout after the record started
            });

    assertThat(p.process(incoming(M), lapsed)).as("not finished: redelivered").isFalse();
    assertThat(effects).as("the handler ran inside the transaction").hasValue(1);
    assertThat(commitChecks).as("asked once, not retried as a failure").hasValue(1);
    assertThat(inbox.rows).as("rolled back: no inbox row").isEmpty();
    assertThat(completions).as("nothing completed").isEmpty();
    assertThat(p.stats().applied()).isZero();

    // the next owner (or this one, its membership verified) applies it
    assertThat(p.process(incoming(M), Ownership.of(() -> true, () -> true))).isTrue();
    assertThat(inbox.rows).containsKey(M.id());
    assertThat(p.stats().applied()).isEqualTo(1);
  }

  @Test
  void aPlainOwnershipSupplierIsNotAskedBeforeTheCommit() {
    DeliveryProcessor p = processor(charging(false), 3);
    AtomicInteger asked = new AtomicInteger();

    assertThat(p.process(incoming(M), () -> asked.incrementAndGet() == 1)).isTrue();
    assertThat(asked).as("only before the attempt started").hasValue(1);
    assertThat(inbox.rows).containsKey(M.id());
  }

  @Test
  void aDuplicateGetsTheStoredResultWithoutRunningTheEffect() {
    DeliveryProcessor p = processor(charging(false), 3);
    assertThat(p.process(incoming(M), () -> true)).isTrue();
    assertThat(p.process(incoming(M), () -> true)).isTrue();
    assertThat(effects).hasValue(1);
    assertThat(inbox.rows.get(M.id()))
        .get()
        .satisfies(r -> assertThat(r.contentType()).isEqualTo(Payload.JSON));
    assertThat(completions)
        .containsExactly(
            new Completed(M.id(), Optional.of("{\"receipt\":1}"), false, false),
            new Completed(M.id(), Optional.of("{\"receipt\":1}"), true, false));
    assertThat(p.stats().applied()).isEqualTo(1);
    assertThat(p.stats().duplicatesSuppressed()).isEqualTo(1);
  }

  @Test
  void aFailedCompletionIsRetriedAsADuplicateWithTheStoredResult() {
    DeliveryProcessor p = processor(charging(true), 3);
    assertThat(p.process(incoming(M), () -> true)).isTrue();
    assertThat(effects).as("the effect ran once").hasValue(1);
    assertThat(completions)
        .extracting(Completed::duplicate)
        .as("the failed completion, then its retry as a duplicate")
        .containsExactly(false, true);
    assertThat(completions)
        .extracting(Completed::result)
        .containsOnly(Optional.of("{\"receipt\":1}"));
  }

  @Test
  void withoutARecordedResultCompletedHearsNone() {
    DeliveryProcessor p =
        processor(
            new MessageHandler() {
              @Override
              public void handle(Delivery d) {
                effects.incrementAndGet();
              }

              @Override
              public void completed(Delivery d, Optional<Payload> result, boolean duplicate) {
                completions.add(
                    new Completed(
                        d.message().id(), result.map(Payload::asString), duplicate, false));
              }
            },
            1);
    p.process(incoming(M), () -> true);
    p.process(incoming(M), () -> true);
    assertThat(completions).extracting(Completed::result).containsOnly(Optional.empty());
  }

  @Test
  void aStoreThatKeepsNoResultsRefusesARecordedOneInsteadOfLosingIt() throws Exception {
    List<String> ran = new CopyOnWriteArrayList<>();
    InboxStore plain =
        new InMemoryInbox() {
          @Override
          public synchronized Processed processOnceWithResult(
              String consumer, UUID messageId, byte[] sha, ResultWork work) {
            throw new AssertionError("not called: the SPI's default is under test");
          }

          @Override
          public boolean processOnce(String consumer, UUID messageId, Work work) throws Exception {
            work.run(null);
            ran.add("committed " + messageId);
            return true;
          }
        };
    InboxStore viaDefault = new DefaultOnly(plain);
    UUID id = UUID.randomUUID();
    assertThat(
            viaDefault
                .processOnceWithResult("c", id, new byte[32], c -> Optional.empty())
                .outcome())
        .isEqualTo(InboxStore.Outcome.APPLIED);
    org.assertj.core.api.Assertions.assertThatThrownBy(() ->
            viaDefault.processOnceWithResult(
                "c", UUID.randomUUID(), new byte[32], c -> Optional.of(Payload.json("{}"))))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("does not store results");
    assertThat(ran).containsExactly("committed " + id);
  }

  /** Delegates everything but {@code processOnceWithResult}, so the SPI's default runs. */
  record DefaultOnly(InboxStore delegate) implements InboxStore {
    @Override
    public boolean processOnce(String consumer, UUID messageId, Work work) throws Exception {
      return delegate.processOnce(consumer, messageId, work);
    }

    @Override
    public Set<UUID> processBatch(String consumer, List<UUID> ids, BatchWork work)
        throws Exception {
      return delegate.processBatch(consumer, ids, work);
    }

    @Override
    public boolean advanceVersion(Connection connection, String entity, long version)
        throws Exception {
      return delegate.advanceVersion(connection, entity, version);
    }

    @Override
    public int purge(String consumer, Duration age, int limit) {
      return delegate.purge(consumer, age, limit);
    }
  }
}
