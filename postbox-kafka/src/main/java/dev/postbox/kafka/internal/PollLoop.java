package dev.postbox.kafka.internal;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.time.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The subscriber's poll thread: polls, hands records to the {@link RecordDispatcher}, pauses and
 * resumes partitions for back-pressure, verifies the membership when the fence asks, commits the
 * finished prefix, and at the end lets running records finish and closes the consumer. It never
 * runs handlers, so the consumer stays in its group.
 *
 * <p>{@link #run()} runs on one thread; {@link #awaitEnd()} from any.
 */
public final class PollLoop implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(PollLoop.class);
  private static final Duration POLL_TIMEOUT = Duration.ofMillis(50);
  private static final Duration PARTLY_PAUSED_POLL_TIMEOUT = Duration.ofMillis(5);

  /** What the poll loop works with; built once per start. */
  public record Parts(
      Subscription subscription,
      Consumer<byte[], byte[]> consumer,
      DeliveryProcessor processor,
      RecordDispatcher dispatcher,
      OffsetCommitter committer,
      RebalanceHandler rebalance,
      SubscriberPartitions partitions,
      InFlightLimit inFlight,
      PausePolicy pauses,
      MembershipFence fence,
      PollLoopHealth health,
      SubscriberGauges gauges,
      Ticker ticker) {}

  private final Parts p;
  private final Subscription subscription;
  private final Consumer<byte[], byte[]> consumer;
  private final BooleanSupplier running;
  private final CommitBeforeHandling preCommit; // AT_MOST_ONCE
  private final CountDownLatch ended = new CountDownLatch(1);
  private boolean somePaused;

  /** A poll loop over {@code parts} that goes on while {@code running}. */
  public PollLoop(Parts parts, BooleanSupplier running) {
    this.p = parts;
    this.subscription = parts.subscription();
    this.consumer = parts.consumer();
    this.running = running;
    this.preCommit = new CommitBeforeHandling(consumer, subscription.name());
  }

  /** Waits until {@link #run()} ended (normally or not). */
  public void awaitEnd() throws InterruptedException {
    ended.await();
  }

  @Override
  public void run() {
    try {
      p.fence().started();
      consumer.subscribe(subscription.topics(), p.rebalance());
      while (running.getAsBoolean()) {
        pollOnce();
      }
      shutdown();
      p.health().ended(Optional.empty());
    } catch (WakeupException e) {
      shutdown();
      p.health().ended(Optional.empty());
    } catch (RuntimeException | Error e) {
      log.error(
          "{}: poll loop failed; the consumer is closed and this subscriber consumes nothing more"
              + " (state().alive() is false)",
          subscription.name(),
          e);
      p.health().ended(Optional.of(e));
      p.dispatcher().stopStarting();
      try {
        consumer.close(Duration.ofSeconds(5));
      } catch (RuntimeException ignored) {
        // already failing
      }
      if (e instanceof Error err) {
        throw err;
      }
    } finally {
      ended.countDown();
    }
  }

  // the consumer's last-heartbeat-seconds-ago metric, looked up once (poll thread only)
  private org.apache.kafka.common.Metric heartbeatMetric;
  private boolean heartbeatMetricLooked;

  /** How long ago the consumer last sent a heartbeat, if it says (and has sent one). */
  private Optional<Duration> heartbeatAge() {
    if (!heartbeatMetricLooked) {
      heartbeatMetricLooked = true;
      for (var e : consumer.metrics().entrySet()) {
        if (e.getKey().name().equals("last-heartbeat-seconds-ago")
            && e.getKey().group().equals("consumer-coordinator-metrics")) {
          heartbeatMetric = e.getValue();
        }
      }
    }
    if (heartbeatMetric == null) {
      return Optional.empty();
    }
    Object v = heartbeatMetric.metricValue();
    if (v instanceof Number n && n.doubleValue() >= 0 && !Double.isNaN(n.doubleValue())) {
      return Optional.of(Duration.ofMillis((long) (n.doubleValue() * 1000)));
    }
    return Optional.empty(); // no heartbeat sent yet
  }

  private void pollOnce() {
    Duration timeout = POLL_TIMEOUT;
    if (p.pauses().allPaused()) {
      // Wait for the workers to make room rather than for the poll to time out: a paused
      // consumer returns nothing, so a blocking poll would idle the workers once they drained.
      p.inFlight().awaitResumable(POLL_TIMEOUT);
      applyBackPressure();
    }
    if (p.pauses().allPaused()) {
      timeout = Duration.ZERO; // still full: just keep the group protocol going
    } else if (somePaused) {
      timeout = PARTLY_PAUSED_POLL_TIMEOUT; // notice soon when a paused partition has room
    }
    ConsumerRecords<byte[], byte[]> records = consumer.poll(timeout);
    p.health().polled();
    if (!consumer.assignment().isEmpty()) {
      // while (re)joining, no heartbeat is sent and there is nothing to fence
      heartbeatAge().ifPresent(p.fence()::heartbeatAge);
    }
    boolean verify = p.fence().polled();
    if (!records.isEmpty()) {
      // at-most-once: a crash from here on loses these records, never repeats them; a
      // commit that failed (a rebalance) skips them: they are read again, not handled twice
      if (subscription.guarantee() != DeliveryGuarantee.AT_MOST_ONCE || preCommit.commit(records)) {
        p.dispatcher().dispatch(records);
      }
      // counted after they are in flight: whoever sees them received also sees them in flight
      // until they finish (ConsumerFeaturesIT waited for "received 5, none in flight" and read
      // the effects before the last records had been dispatched)
      p.processor().received(records.count());
    }
    if (verify) {
      // after dispatch: the trackers hold what this poll returned
      p.committer().verifyMembership();
    }
    applyBackPressure();
    p.committer().commitFinished(false);
    p.committer().proveMembership(); // after: a commit of finished records proves it as well
    p.gauges().sampleLag(consumer::currentLag);
  }

  private void applyBackPressure() {
    Map<TopicPartition, Integer> unfinished = p.partitions().unfinished(consumer.assignment());
    Set<TopicPartition> pausedNow = consumer.paused();
    Set<TopicPartition> wanted = p.pauses().decide(p.inFlight(), unfinished, pausedNow);
    List<TopicPartition> pause = new ArrayList<>();
    for (TopicPartition tp : wanted) {
      if (!pausedNow.contains(tp)) {
        pause.add(tp);
      }
    }
    List<TopicPartition> resume = new ArrayList<>();
    for (TopicPartition tp : pausedNow) {
      if (!wanted.contains(tp)) {
        resume.add(tp);
      }
    }
    if (!pause.isEmpty()) {
      consumer.pause(pause);
    }
    if (!resume.isEmpty()) {
      consumer.resume(resume);
    }
    somePaused = !wanted.isEmpty();
  }

  private void shutdown() {
    p.dispatcher().stopStarting(); // unstarted records are dropped, retries stop
    consumer.pause(consumer.assignment());
    long deadline = p.ticker().deadlineIn(subscription.shutdownTimeout());
    while (p.inFlight().get() > 0 && !p.ticker().reached(deadline)) {
      consumer.poll(
          Duration.ofMillis(50)); // paused: keeps the membership alive while records finish
      p.committer().commitFinished(false);
    }
    p.committer().commitFinished(true);
    consumer.close(Duration.ofSeconds(10));
  }
}
