package dev.postbox.rabbitmq.internal;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.ShardBalancer;
import dev.postbox.core.spi.ShardLeaseStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.rabbitmq.RabbitTopology;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which shard queues of a subscription this instance consumes: declares them (with their wait
 * queues) and consumes every shard, or, with shard leases, this instance's share through a {@link
 * ShardBalancer}; an {@code UNORDERED} subscription's instances compete on every shard queue and
 * take no leases.
 */
public final class SubscriptionShards {

  private static final Logger log = LoggerFactory.getLogger(SubscriptionShards.class);

  /**
   * How the shards are consumed.
   *
   * @param subscription the subscription
   * @param shards shard queues per topic
   * @param prefetch the prefetch of each shard channel
   * @param retryTiers the delays of the wait queues declared beside each shard queue
   * @param leases the shard leases, or empty: every shard here
   * @param leaseTtl how long a lease lasts without renewal
   * @param member this instance's id in the leases
   */
  public record Settings(
      Subscription subscription,
      int shards,
      int prefetch,
      List<Duration> retryTiers,
      Optional<ShardLeaseStore> leases,
      Duration leaseTtl,
      String member) {}

  private final Settings settings;
  private final ShardSet.ConsumerFactory consumers;
  private final BooleanSupplier running;
  private final Ticker ticker;
  private final Sleeper sleeper;
  private volatile ShardSet set;
  private volatile ShardBalancer balancer;

  public SubscriptionShards(
      Settings settings,
      ShardSet.ConsumerFactory consumers,
      BooleanSupplier running,
      Ticker ticker,
      Sleeper sleeper) {
    this.settings = settings;
    this.consumers = consumers;
    this.running = running;
    this.ticker = ticker;
    this.sleeper = sleeper;
  }

  /** Declares the topology on {@code connection} and starts consuming. */
  public void start(Connection connection) throws IOException {
    Subscription s = settings.subscription();
    ShardSet shardSet =
        new ShardSet(
            s.name(),
            connection,
            declare(connection),
            settings.prefetch(),
            consumers,
            running,
            ticker);
    set = shardSet;
    if (settings.leases().isEmpty() || competing()) {
      if (settings.leases().isPresent()) {
        log.info(
            "{} is UNORDERED: its instances compete on every shard queue, shard leases unused",
            s.name());
      }
      shardSet.startAll(settings.shards());
      return;
    }
    ShardBalancer b =
        new ShardBalancer(
            settings.leases().get(),
            s.name(),
            settings.member(),
            settings.shards(),
            settings.leaseTtl(),
            sleeper,
            shardSet);
    balancer = b;
    b.start();
  }

  /** Declares the topology; returns each topic's shard queues, by shard. */
  private Map<String, List<String>> declare(Connection connection) throws IOException {
    // kept open with the connection: automatic recovery redeclares on the channel that declared
    Channel setup = connection.createChannel();
    Subscription s = settings.subscription();
    Map<String, List<String>> queues = new LinkedHashMap<>();
    for (String topic : s.topics()) {
      List<String> declared =
          RabbitTopology.declareShards(
              setup, s.name(), topic, settings.shards(), RabbitTopology.Consumers.of(s.ordering()));
      for (String queue : declared) {
        RabbitTopology.declareWaitQueues(setup, queue, settings.retryTiers());
      }
      queues.put(topic, declared);
    }
    return queues;
  }

  /** Whether the instances compete on every shard queue ({@code UNORDERED}). */
  private boolean competing() {
    return RabbitTopology.Consumers.of(settings.subscription().ordering())
        == RabbitTopology.Consumers.COMPETING;
  }

  /** The shards consumed here now, sorted; none before {@link #start}. */
  public Set<Integer> held() {
    ShardSet s = set;
    return s == null ? Set.of() : s.shards();
  }

  /** The shards being handed over now; empty without leases. */
  public Set<Integer> handingOver() {
    ShardBalancer b = balancer;
    return b == null ? Set.of() : b.handingOver();
  }

  /** For the start-up log line: the queues and, with leases, the shards held as which member. */
  public String describe() {
    ShardSet s = set;
    String queues = s == null ? "no" : Integer.toString(s.queues());
    return queues
        + " shard queue(s)"
        + (balancer == null ? "" : ", shards " + held() + " as member " + settings.member());
  }

  /** Takes and gives up no more shards (the first step of a close). */
  public void stopBalancing() {
    ShardBalancer b = balancer;
    if (b != null) {
      b.stop();
    }
  }

  /** Releases the leases, after the connection's close returned the unfinished deliveries. */
  public void leave() {
    ShardBalancer b = balancer;
    if (b != null) {
      b.leave();
    }
  }
}
