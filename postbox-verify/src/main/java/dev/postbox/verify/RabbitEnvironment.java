package dev.postbox.verify;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.rabbitmq.RabbitTopology;
import dev.postbox.testkit.PostgresServer;
import dev.postbox.testkit.RabbitCluster;
import dev.postbox.testkit.RabbitMqServer;
import dev.postbox.verify.Fleet.Child;
import dev.postbox.verify.Fleet.Role;
import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * The system the RabbitMQ campaign runs on: PostgreSQL (its own process; with {@code --cluster} a
 * primary with a streaming standby, see {@link FailoverPair}), the broker (the command's own
 * private node, an external one named by {@value RabbitMqServer#URL_ENV}, or with {@code --cluster}
 * the test kit's three-node cluster), the harness schema and the consumers' shard queues, the queue
 * reader and history checker, and the fleet of producers, relays ({@code RelayMain} with the
 * RabbitMQ relay publisher) and consumers ({@link RabbitConsumerMain}), each its own JVM, placed in
 * the partitions' network namespaces when there are any; and what a round needs of it (the phase
 * the producers are started for, the armed role restarted, everything brought back up). Not
 * thread-safe.
 */
final class RabbitEnvironment implements AutoCloseable {

  static final int SHARDS = 4;
  static final int KEYS = 200;
  static final int HOT_KEYS = 4;
  static final int PRODUCERS = 2;
  static final int RELAYS = 2;
  static final int LEASE_MS = 3_000;
  static final String SUBSCRIPTION = "verify-consumers";

  private final RabbitCampaign.Settings settings;
  private final PrintStream out;
  private final FaultLog log;
  private PostgresServer pg; // with --cluster: the pair's multi-host URL (no lifecycle)
  private FailoverPair pair; // with --cluster
  private RabbitMqServer rabbit;
  private RabbitCluster cluster; // with --cluster, in place of rabbit
  private HikariDataSource ds;
  private RabbitQueueReader reader;
  private HistoryChecker checker;
  private Fleet fleet;
  private final List<Child> producers = new ArrayList<>();
  private final List<Child> workers = new ArrayList<>();
  private volatile int phase;
  private RabbitPartitions network = RabbitPartitions.none();
  private String topic;

  RabbitEnvironment(RabbitCampaign.Settings settings, PrintStream out, FaultLog log) {
    this.settings = settings;
    this.out = out;
    this.log = log;
  }

  /**
   * Starts the broker (the cluster with {@code --cluster}, else the node at {@code url} or a
   * private node from {@code script} that also listens on {@code network}'s broker address; {@code
   * ownNetworks}: the cluster's nodes each in its own network namespace, so that one can be cut
   * off), PostgreSQL and the fleet, whose new incarnations {@code armer} arms; waits until every
   * relay and consumer runs.
   */
  void start(
      Optional<String> url,
      Optional<Path> script,
      RabbitPartitions network,
      boolean ownNetworks,
      Function<Child, Optional<String>> armer)
      throws Exception {
    this.network = network;
    if (settings.cluster()) {
      cluster = RabbitClusterFaults.start(script.get(), ownNetworks);
    } else {
      rabbit =
          url.map(RabbitMqServer::external)
              .orElseGet(
                  () -> RabbitMqServer.startPrivate(script.get(), network.brokerAddresses()));
    }
    Path dir = settings.dir();
    out.println(
        "postbox verify --transport rabbitmq: seed "
            + settings.seed()
            + ", phases of "
            + settings.phase().toSeconds()
            + " s, relay "
            + settings.relay().cliName()
            + ", "
            + dir);
    String jdbcUrl = startPostgres(dir);
    topic = "verify-rabbit-" + Long.toUnsignedString(settings.seed(), 36);
    String uri = cluster != null ? cluster.uri() : rabbit.uri();
    // on a cluster every client knows every node
    List<String> nodes = cluster != null ? cluster.addresses() : List.of();
    reader = new RabbitQueueReader(uri, nodes, topic, SHARDS);
    // the consumers' queues exist before the relays publish (mandatory: nothing unroutable)
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(uri);
    try (Connection c = f.newConnection("verify-setup");
        Channel ch = c.createChannel()) {
      RabbitTopology.declareShards(ch, SUBSCRIPTION, topic, SHARDS);
    }
    checker = new HistoryChecker(ds, null, reader, topic, SHARDS, SUBSCRIPTION, log);
    if (pair != null) {
      checker.commitJournals(pair.journals(), !pair.synchronous());
    }
    fleet = new Fleet(log);
    // the children reach both servers by the partitions' addresses when there is a network
    String childUri = network.amqpUri(uri);
    String addresses = String.join(",", nodes);
    Path logs = dir.resolve("logs");
    addProducers(jdbcUrl, logs);
    addRelays(jdbcUrl, childUri, addresses, logs);
    addConsumers(jdbcUrl, childUri, addresses, logs);
    fleet.armer(armer);
    workers.forEach(fleet::want);
    fleet.awaitStarted(Duration.ofMinutes(2));
    out.println(
        "started: PostgreSQL"
            + (pair != null ? " with " + pair.standbyKind() : "")
            + ", RabbitMQ ("
            + (cluster != null
                ? "cluster of " + cluster.size() + " nodes"
                : rabbit.isExternal() ? "external" : "private node")
            + "), "
            + RELAYS
            + " relays, "
            + settings.consumerCount()
            + " consumers ("
            + settings.consumers().cliName()
            + ", "
            + SHARDS
            + " shard queues of "
            + topic
            + ")");
  }

  /**
   * Starts PostgreSQL (with {@code --cluster} a primary with a streaming standby, reached through
   * the multi-host URL) with the harness schema; the children's JDBC URL.
   */
  private String startPostgres(Path dir) throws SQLException {
    if (settings.cluster()) {
      pair =
          FailoverPair.start(
              dir.resolve("postgres-pair"), !settings.asyncStandby(), dir.resolve("journals"));
      pg = pair.current();
    } else {
      PostgresServer.Builder pgb =
          PostgresServer.builder()
              .directory(dir.resolve("postgres"))
              .serverConfig("track_commit_timestamp", "on")
              .startupTimeout(Duration.ofMinutes(3));
      network.configure(pgb, dir);
      pg = pgb.build();
      pg.start();
    }
    String schema = pg.createSchema("verify");
    ds = pg.dataSource(schema, 4);
    PostboxMigrations.migrate(ds);
    HarnessSchema.create(ds, KEYS);
    return network.jdbcUrl(pg.jdbcUrl(schema));
  }

  private void addProducers(String jdbcUrl, Path logs) {
    for (int i = 0; i < PRODUCERS; i++) {
      String name = "producer-" + (char) ('a' + i);
      int index = i;
      producers.add(
          fleet.add(
              name,
              Role.PRODUCER,
              (incarnation, instance) ->
                  Fleet.jvm(ProducerMain.class, logs, name, "128m")
                      .args(
                          jdbcUrl,
                          topic,
                          instance,
                          Integer.toString(phase),
                          Double.toString(settings.rate() / PRODUCERS),
                          "3",
                          Integer.toString(KEYS),
                          Integer.toString(HOT_KEYS),
                          Long.toString(
                              settings.seed() * 1_000_003L
                                  + phase * 1_009L
                                  + index * 101L
                                  + incarnation),
                          "20",
                          // the CDC relay's campaign: transactions of 1 to 3 events
                          settings.relay() == RelayMode.CDC ? "3" : "1",
                          // on the pair: every acknowledged commit journaled outside the database
                          pair != null ? pair.journal(instance, CommitJournal.SUFFIX) : "")));
    }
  }

  private void addRelays(String jdbcUrl, String childUri, String addresses, Path logs) {
    boolean cdc = settings.relay() == RelayMode.CDC;
    for (int i = 0; i < RELAYS; i++) {
      String name = "relay-" + (char) ('a' + i);
      workers.add(
          fleet.add(
              name,
              Role.RELAY,
              (incarnation, instance) ->
                  network
                      .place(Fleet.jvm(RelayMain.class, logs, name, "128m"), name)
                      .args(
                          jdbcUrl,
                          childUri,
                          instance,
                          Integer.toString(LEASE_MS),
                          // CDC: small batches, so that batches end inside multi-event transactions
                          cdc ? "4" : "100",
                          "",
                          cdc ? "cdc" : "",
                          addresses,
                          // on the pair: the CDC slot is a failover slot the standby keeps a copy
                          // of
                          pair != null ? "failover-slot" : "")));
    }
  }

  private void addConsumers(String jdbcUrl, String childUri, String addresses, Path logs) {
    for (int i = 1; i <= settings.consumerCount(); i++) {
      String name = "consumer-" + i;
      workers.add(
          fleet.add(
              name,
              Role.CONSUMER,
              (incarnation, instance) ->
                  network
                      .place(Fleet.jvm(RabbitConsumerMain.class, logs, name, "160m"), name)
                      .args(
                          jdbcUrl,
                          childUri,
                          topic,
                          SUBSCRIPTION,
                          instance,
                          Integer.toString(SHARDS),
                          settings.consumers().cliName(),
                          addresses,
                          pair != null ? pair.journal(instance, AppliedJournal.SUFFIX) : "")));
    }
  }

  /**
   * Starts the next phase: its number, which the producers started from now on write; the armed
   * role's processes restarted (SIGTERM, clean) so that they start armed, the producers started,
   * and waits until every process runs.
   */
  int beginPhase(Role armedRole, String reason) {
    int p = ++phase;
    for (Child c : workers) {
      if (c.role() == armedRole) {
        fleet.stop(c, reason, true);
      }
    }
    producers.forEach(fleet::want);
    // the phase starts when every process runs (a JVM start on a loaded machine outlasts a short
    // phase: the producers would commit nothing in it)
    fleet.awaitStarted(Duration.ofMinutes(3));
    return p;
  }

  /**
   * Ends phase {@code p}: every network cut removed, the producers stopped, the broker up, and
   * every worker running unarmed (a consumer the scaling scenario took away joins again).
   */
  void heal(int p) {
    network.healAll();
    producers.forEach(c -> fleet.stop(c, "end of phase " + p, false));
    if (cluster != null) {
      cluster.heal();
    } else if (!rabbit.isExternal() && !rabbit.isRunning()) {
      rabbit.start();
    }
    for (Child c : workers) {
      fleet.want(c);
      if (c.paused()) {
        fleet.resume(c);
      }
      if (!c.armed().isEmpty()) {
        fleet.stop(c, "disarm", true);
      }
    }
  }

  /** The campaign's settings. */
  RabbitCampaign.Settings settings() {
    return settings;
  }

  /** The campaign's directory (servers' data, logs, the fault log). */
  Path directory() {
    return settings.dir();
  }

  HistoryChecker checker() {
    return checker;
  }

  DataSource dataSource() {
    return ds;
  }

  Fleet fleet() {
    return fleet;
  }

  /** The relays and consumers. */
  List<Child> workers() {
    return workers;
  }

  /** The PostgreSQL pair with {@code --cluster}; empty on one server. */
  Optional<FailoverPair> pair() {
    return Optional.ofNullable(pair);
  }

  /** The single node (private or external); null with {@code --cluster}. */
  RabbitMqServer rabbit() {
    return rabbit;
  }

  /** The cluster with {@code --cluster}; else null. */
  RabbitCluster cluster() {
    return cluster;
  }

  RabbitPartitions network() {
    return network;
  }

  String topic() {
    return topic;
  }

  @Override
  public void close() {
    if (fleet != null) {
      fleet.close();
    }
    if (reader != null) {
      reader.close();
    }
    if (ds != null) {
      ds.close();
    }
    if (rabbit != null && !rabbit.isExternal()) {
      rabbit.close();
    }
    if (cluster != null) {
      cluster.close();
    }
    if (pair != null) {
      pair.close();
    } else if (pg != null) {
      pg.close();
    }
    network.close();
  }
}
