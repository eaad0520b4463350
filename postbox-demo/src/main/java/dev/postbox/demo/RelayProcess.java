package dev.postbox.demo;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.cdc.CdcRelay;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

/**
 * A relay as its own OS process (the way it runs in production: beside the service, or as a
 * sidecar). Arguments: JDBC URL (with the schema), Kafka bootstrap servers (or RabbitMQ's AMQP
 * URI), instance id, lease TTL in milliseconds, then options: {@code
 * --duplicate-publish=TYPE[,TYPE...]} publishes messages of those types twice on purpose (see
 * {@link DuplicatingPublisher}); {@code --transport=rabbitmq} publishes with {@link
 * RabbitRelayPublisher} (confirms, mandatory) instead of Kafka; {@code --relay=cdc} runs the CDC
 * relay ({@link CdcRelay}: one instance streams the schema's slot, the others stand by; the lease
 * TTL is the slot lease's) instead of the polling relay, and {@code --outbox=emit} has it publish
 * the logical messages of an {@link EmitOrderOutbox} too. Runs until killed or terminated; SIGTERM
 * closes it cleanly (marks the batch in flight, releases its lanes or its slot).
 */
public final class RelayProcess {

  private static final String DUPLICATE_PUBLISH = "--duplicate-publish=";
  private static final String TRANSPORT = "--transport=";
  private static final String RELAY = "--relay=";
  private static final String OUTBOX = "--outbox=";

  private RelayProcess() {}

  public static void main(String[] args) throws Exception {
    List<String> positional = new ArrayList<>();
    Set<String> duplicateTypes = Set.of();
    ShopTransport.Kind transport = ShopTransport.Kind.KAFKA;
    String relayKind = "polling";
    String outboxKind = "table";
    for (String a : args) {
      if (a.startsWith(RELAY)) {
        relayKind = a.substring(RELAY.length());
      } else if (a.startsWith(OUTBOX)) {
        outboxKind = a.substring(OUTBOX.length());
      } else if (a.startsWith(TRANSPORT)) {
        transport = ShopTransport.Kind.of(a.substring(TRANSPORT.length()));
      } else if (a.startsWith(DUPLICATE_PUBLISH)) {
        duplicateTypes =
            Set.copyOf(Arrays.asList(a.substring(DUPLICATE_PUBLISH.length()).split(",")));
      } else {
        positional.add(a);
      }
    }
    if (positional.size() < 3) {
      System.err.println(
          "usage: RelayProcess <jdbc-url> <bootstrap-servers> <instance-id> [lease-ttl-ms]"
              + " [--duplicate-publish=TYPE[,TYPE...]] [--transport=kafka|rabbitmq]"
              + " [--relay=polling|cdc] [--outbox=table|emit]");
      System.exit(2);
    }
    String id = positional.get(2);
    Duration ttl =
        Duration.ofMillis(positional.size() > 3 ? Long.parseLong(positional.get(3)) : 10_000);
    HikariConfig hc = new HikariConfig();
    // PostgreSQL's default, named: left to detection, a pool whose first connection meets a
    // database
    // restart keeps isolation -1 and refuses every later connection (HikariCP #1944)
    hc.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    hc.setJdbcUrl(positional.get(0));
    hc.setMaximumPoolSize(4);
    hc.setPoolName("relay-" + id);
    HikariDataSource ds = new HikariDataSource(hc);
    RelayPublisher publisher =
        transport == ShopTransport.Kind.RABBITMQ
            ? RabbitRelayPublisher.builder(positional.get(1)).connectionName("relay-" + id).build()
            : KafkaRelayPublisher.builder(positional.get(1)).build();
    if (!duplicateTypes.isEmpty()) {
      publisher = new DuplicatingPublisher(publisher, duplicateTypes);
    }
    RelayMode mode = RelayMode.of(relayKind, outboxKind);
    AutoCloseable relay =
        mode.cdc()
            ? CdcRelay.builder(ds, positional.get(0), publisher)
                .instanceId(id)
                .leaseTtl(ttl)
                .standbyRetryInterval(Duration.ofMillis(200))
                .logicalMessages(mode == RelayMode.CDC_EMIT)
                .build()
            : Relay.builder(PostgresRelayStore.create(ds), publisher)
                .instanceId(id)
                .leaseTtl(ttl)
                .pollInterval(Duration.ofMillis(250))
                .metrics(MetricsEndpoint.forChildProcess().orElse(PostboxMetrics.noop()))
                .build();
    CountDownLatch stopped = new CountDownLatch(1);
    RelayPublisher p = publisher;
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> {
              try {
                relay.close();
              } catch (Exception e) {
                e.printStackTrace();
              }
              ds.close();
              if (p instanceof DuplicatingPublisher d) {
                System.out.println(
                    "relay " + id + " stopped; second copies published: " + d.secondCopies());
              }
              stopped.countDown();
            }));
    if (relay instanceof CdcRelay cdc) {
      cdc.start(); // creates the publication and the slot, so nothing committed after is missed
    } else {
      ((Relay) relay).start();
    }
    System.out.println(
        "relay "
            + id
            + " started"
            + (mode.cdc() ? " (" + mode.relay() + ", " + mode.outbox() + " outbox)" : "")
            + (duplicateTypes.isEmpty() ? "" : "; publishing twice: " + duplicateTypes));
    stopped.await();
  }
}
