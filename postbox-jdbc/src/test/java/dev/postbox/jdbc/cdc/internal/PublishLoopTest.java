package dev.postbox.jdbc.cdc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** The publishing loop on fake time: what is handed to the marker, and what is sent again. */
class PublishLoopTest {

  private final FakeTime time = FakeTime.create();
  private final List<PublishedRowMarker.Settled> settled = new ArrayList<>();
  private final List<List<Message>> sent = new ArrayList<>();

  private static CdcEvent event(long commitLsn, int index, long position, String key) {
    Message m = Message.builder("t", "x").key(key).build();
    return new CdcEvent(commitLsn, index, new OutboxRecord(position, 0, m, Instant.EPOCH, 0));
  }

  /** Runs the loop over {@code events} until the publisher has been called {@code calls} times. */
  private void run(List<CdcEvent> events, int calls, Scripted publisher) throws Exception {
    LinkedBlockingQueue<CdcEvent> queue = new LinkedBlockingQueue<>(events);
    AtomicBoolean running = new AtomicBoolean(true);
    publisher.onCall = n -> running.set(n < calls);
    PublishLoop loop =
        new PublishLoop(
            queue,
            publisher,
            settled::add,
            10,
            new Backoff(Duration.ofMillis(100), Duration.ofSeconds(1), 2, 0),
            time,
            running::get);
    loop.run();
  }

  private final class Scripted implements RelayPublisher {
    final List<List<PublishOutcome>> script;
    java.util.function.IntConsumer onCall = n -> {};
    int calls;

    Scripted(List<List<PublishOutcome>> script) {
      this.script = script;
    }

    @Override
    public List<PublishOutcome> publish(List<Message> messages) {
      sent.add(List.copyOf(messages));
      List<PublishOutcome> out = script.get(calls++);
      onCall.accept(calls);
      return out;
    }

    @Override
    public void close() {}
  }

  private static final RelayPublisher.PublishOutcome OK =
      RelayPublisher.PublishOutcome.ACKNOWLEDGED;
  private static final RelayPublisher.PublishOutcome LATER =
      new RelayPublisher.PublishOutcome.Failed(new RuntimeException("broker away"), false);
  private static final RelayPublisher.PublishOutcome NEVER =
      new RelayPublisher.PublishOutcome.Failed(new RuntimeException("too large"), true);

  @Test
  void afterATransientFailureTheRestIsSentAgainFromTheFirstUnacknowledgedRow() throws Exception {
    List<CdcEvent> events =
        List.of(
            event(100, 0, 1, "a"),
            event(100, 1, 2, "b"),
            event(200, 0, 3, "a"),
            event(200, 1, 4, "c"));
    run(events, 2, new Scripted(List.of(List.of(OK, LATER, OK, LATER), List.of(OK, OK, OK))));
    assertThat(sent.get(1)).extracting(m -> m.key().orElseThrow()).containsExactly("b", "a", "c");
    assertThat(settled).hasSize(2);
    assertThat(settled.get(0).acked()).extracting(OutboxRecord::position).containsExactly(1L);
    assertThat(settled.get(0).last()).isEqualTo(events.get(0));
    assertThat(settled.get(1).acked())
        .extracting(OutboxRecord::position)
        .containsExactly(2L, 3L, 4L);
    assertThat(settled.get(1).last()).isEqualTo(events.get(3));
    assertThat(time.sleeps()).containsExactly(Duration.ofMillis(100));
  }

  @Test
  void aRowTheBrokerCanNeverTakeIsMarkedFailedAndTheRestGoesOn() throws Exception {
    List<CdcEvent> events = List.of(event(100, 0, 1, "a"), event(100, 1, 2, "b"));
    run(events, 1, new Scripted(List.of(List.of(NEVER, OK))));
    assertThat(settled).hasSize(1);
    assertThat(settled.get(0).failed()).extracting(OutboxRecord::position).containsExactly(1L);
    assertThat(settled.get(0).acked()).extracting(OutboxRecord::position).containsExactly(2L);
    assertThat(time.sleeps()).isEmpty();
  }

  /** Pipelined: sends return at once; each batch's outcomes come from the script when awaited. */
  private final class Pipelined implements RelayPublisher {
    final List<List<PublishOutcome>> script;
    final List<String> log = new ArrayList<>();
    java.util.function.IntConsumer onCall = n -> {};
    int calls;

    Pipelined(List<List<PublishOutcome>> script) {
      this.script = script;
    }

    private PendingPublish pending(List<Message> messages, String how) {
      sent.add(List.copyOf(messages));
      int n = calls++;
      log.add(how + n);
      List<PublishOutcome> out = script.get(n);
      onCall.accept(calls);
      return new PendingPublish() {
        @Override
        public List<PublishOutcome> outcomes() {
          log.add("outcomes" + n);
          return out;
        }

        @Override
        public List<PublishOutcome> outcomesWhenIdle() {
          log.add("idle" + n);
          return out;
        }
      };
    }

    @Override
    public PendingPublish send(List<Message> messages) {
      return pending(messages, "send");
    }

    @Override
    public PendingPublish sendAfter(PendingPublish previous, List<Message> messages) {
      return pending(messages, "after");
    }

    @Override
    public List<PublishOutcome> publish(List<Message> messages) throws InterruptedException {
      return pending(messages, "sync").outcomes();
    }

    @Override
    public void close() {}
  }

  /**
   * Runs a loop of batches of 10 with up to {@code maxInFlight} in flight over {@code queue} until
   * the publisher has been called {@code calls} times.
   */
  private void runPipelined(
      LinkedBlockingQueue<CdcEvent> queue,
      Pipelined publisher,
      int calls,
      dev.postbox.core.time.Sleeper sleeper,
      int maxInFlight,
      Duration linger)
      throws Exception {
    AtomicBoolean running = new AtomicBoolean(true);
    publisher.onCall = n -> running.set(n < calls);
    new PublishLoop(
            queue,
            publisher,
            settled::add,
            10,
            new Backoff(Duration.ofMillis(100), Duration.ofSeconds(1), 2, 0),
            sleeper,
            running::get,
            e -> true,
            maxInFlight,
            linger)
        .run();
  }

  @Test
  void pipelinedBatchesAreSettledInOrderAndOnlyUpToTheFirstUnacknowledgedRow() throws Exception {
    List<CdcEvent> events = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      events.add(event(100 + i, 0, i + 1, "k" + (i % 4)));
    }
    List<RelayPublisher.PublishOutcome> tenOk = java.util.Collections.nCopies(10, OK);
    List<RelayPublisher.PublishOutcome> fourOkThenLater = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      fourOkThenLater.add(i < 4 ? OK : LATER);
    }
    Pipelined publisher =
        new Pipelined(
            List.of(tenOk, fourOkThenLater, tenOk, java.util.Collections.nCopies(16, OK)));
    runPipelined(new LinkedBlockingQueue<>(events), publisher, 4, time, 3, Duration.ZERO);
    // three batches in flight before the first outcome was awaited
    assertThat(publisher.log.subList(0, 4))
        .containsExactly("send0", "after1", "after2", "outcomes0");
    // the failed batch's rest and the whole later batch (acknowledged or not) are sent again
    assertThat(sent.get(3)).hasSize(16);
    assertThat(sent.get(3).get(0)).isEqualTo(events.get(14).record().message());
    assertThat(settled).hasSize(3);
    assertThat(settled.get(0).last()).isEqualTo(events.get(9));
    assertThat(settled.get(1).last()).isEqualTo(events.get(13));
    assertThat(settled.get(1).acked())
        .extracting(OutboxRecord::position)
        .containsExactly(11L, 12L, 13L, 14L);
    assertThat(settled.get(2).last()).isEqualTo(events.get(29));
    assertThat(settled.get(2).acked()).hasSize(16);
  }

  @Test
  void withNothingInFlightABatchLingersForTheRowsStreamedMeanwhileAndOneBehindAFlightDoesNot()
      throws Exception {
    LinkedBlockingQueue<CdcEvent> queue = new LinkedBlockingQueue<>(List.of(event(100, 0, 1, "a")));
    List<CdcEvent> meanwhile = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      meanwhile.add(event(200 + i, 0, i + 2, "k" + i));
    }
    List<Duration> lingers = new ArrayList<>();
    dev.postbox.core.time.Sleeper sleeper =
        d -> {
          lingers.add(d);
          time.sleep(d);
          queue.addAll(meanwhile); // streamed while the batch lingered
          meanwhile.clear();
        };
    Pipelined publisher =
        new Pipelined(List.of(java.util.Collections.nCopies(10, OK), List.of(OK, OK, OK)));
    runPipelined(queue, publisher, 2, sleeper, 2, Duration.ofMillis(2));
    // the first row waited once and went out with the nine streamed meanwhile, in one request
    assertThat(sent.get(0)).hasSize(10);
    assertThat(sent.get(0).get(0).key()).contains("a");
    // the rest, three rows, were sent behind it without waiting: a batch was in flight
    assertThat(sent.get(1))
        .extracting(m -> m.key().orElseThrow())
        .containsExactly("k9", "k10", "k11");
    assertThat(publisher.log.subList(0, 2)).containsExactly("send0", "after1");
    assertThat(lingers).containsExactly(Duration.ofMillis(2));
    assertThat(settled).hasSize(2);
    assertThat(settled.get(1).acked())
        .extracting(OutboxRecord::position)
        .containsExactly(11L, 12L, 13L);
  }

  @Test
  void theRelayAwaitsAsIdleOnlyWhenNothingWasStreamedMeanwhile() throws Exception {
    // 15 rows, batches of 10, up to 3 in flight: two batches, then an empty queue below the limit
    List<CdcEvent> events = new ArrayList<>();
    for (int i = 0; i < 15; i++) {
      events.add(event(100 + i, 0, i + 1, "k" + i));
    }
    Pipelined publisher =
        new Pipelined(
            List.of(java.util.Collections.nCopies(10, OK), java.util.Collections.nCopies(5, OK)));
    new PublishLoop(
            new LinkedBlockingQueue<>(events),
            publisher,
            settled::add,
            10,
            new Backoff(Duration.ofMillis(100), Duration.ofSeconds(1), 2, 0),
            time,
            () -> settled.size() < 2,
            e -> true,
            3,
            Duration.ZERO)
        .run();
    // nothing more to send: the publisher may send what it holds back at once (Kafka: no linger);
    // with the in-flight limit reached (the pipelined test above) the batch is awaited as usual
    assertThat(publisher.log).containsExactly("send0", "after1", "idle0", "idle1");
    assertThat(settled).hasSize(2);
    assertThat(settled.get(1).last()).isEqualTo(events.get(14));
  }
}
