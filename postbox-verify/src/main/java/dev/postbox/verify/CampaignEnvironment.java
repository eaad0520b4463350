package dev.postbox.verify;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.KafkaCluster;
import dev.postbox.testkit.PostgresServer;
import dev.postbox.verify.Fleet.Child;
import dev.postbox.verify.Fleet.Role;
import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/**
 * The system a campaign runs on: PostgreSQL (its own process, synchronous commit on; with {@code
 * --cluster} a primary with a synchronous streaming standby, every client given both servers'
 * addresses with {@code targetServerType=primary}), a Kafka broker (its own JVM; with {@code
 * --cluster} the test kit's three-broker KRaft cluster, every client given every broker's address),
 * the harness schema and topic, and the fleet of producers, relays and consumers (each its own
 * JVM); and what the scenarios need of it (the history checker, the servers brought back up, the
 * phase the children are started for).
 */
final class CampaignEnvironment implements AutoCloseable {

  private final Campaign.Settings settings;
  private final PrintStream out;
  private final FaultLog log;
  private PostgresServer pg; // with --cluster: the pair's multi-host URL (no lifecycle)
  private FailoverPair pair; // with --cluster
  private KafkaBroker kafka; // on one broker
  private KafkaCluster cluster; // with --cluster, in place of kafka
  private HikariDataSource ds;
  private Admin admin;
  private TopicReader reader;
  private HistoryChecker checker;
  private Fleet fleet;
  private final List<Child> producers = new ArrayList<>();
  private String topic;
  private volatile int phase;
  // whether the consumers run with ordered parking (the parking scenario); read at each start
  private volatile boolean consumerParking;
  private TransientFailures failures;
  // the partitions scenario's namespaces, when it is selected and they can be made here
  private Optional<NetworkPartitions> network = Optional.empty();
  private Optional<String> networkUnavailable = Optional.empty();
  private Optional<String> brokersUnreachable = Optional.of("not a cluster");

  /** The relay and the consumer that run in network namespaces for the partitions scenario. */
  static final String PARTITIONED_RELAY = "relay-a";

  static final String PARTITIONED_CONSUMER = "consumer-1";

  CampaignEnvironment(Campaign.Settings settings, PrintStream out, FaultLog log) {
    this.settings = settings;
    this.out = out;
    this.log = log;
  }

  /** The campaign's settings. */
  Campaign.Settings settings() {
    return settings;
  }

  /** PostgreSQL as the processes reach it (with {@code --cluster}: whichever is the primary). */
  PostgresServer pg() {
    return pg;
  }

  /**
   * The server that is the primary now, whose lifecycle the database faults act on: the one server,
   * or the pair's {@linkplain FailoverPair#activePrimary() active primary}.
   */
  synchronized PostgresServer primaryServer() {
    return pair != null ? pair.activePrimary() : pg;
  }

  /** The PostgreSQL pair with {@code --cluster}; empty on one server. */
  Optional<FailoverPair> pair() {
    return Optional.ofNullable(pair);
  }

  /**
   * The pair's {@link FailoverPair#failover()} under this object's lock, so that {@link
   * #ensureUp()} never starts the killed primary beside the promoted one.
   *
   * @throws IllegalStateException without a pair, or if the promote or the rejoin failed
   */
  synchronized FailoverPair.Failover failover() {
    if (pair == null) {
      throw new IllegalStateException("no PostgreSQL standby: a failover needs --cluster");
    }
    return pair.failover();
  }

  /** The single broker; null with {@code --cluster}. */
  KafkaBroker kafka() {
    return kafka;
  }

  /** The three-broker cluster with {@code --cluster}; else null. */
  KafkaCluster cluster() {
    return cluster;
  }

  /** The campaign's topic. */
  String topic() {
    return topic;
  }

  Admin admin() {
    return admin;
  }

  HistoryChecker checker() {
    return checker;
  }

  Fleet fleet() {
    return fleet;
  }

  /**
   * The relay instance holding the CDC slot lease now ({@code postbox_cdc_slot}); empty with the
   * other relays, when no lease is live, or when PostgreSQL cannot answer.
   */
  java.util.Optional<String> cdcSlotOwner() {
    if (settings.relay() != RelayMode.CDC) {
      return java.util.Optional.empty();
    }
    try (java.sql.Connection c = ds.getConnection();
        java.sql.Statement s = c.createStatement();
        java.sql.ResultSet rs =
            s.executeQuery(
                "SELECT owner FROM postbox_cdc_slot WHERE lease_until > now() AND owner IS NOT NULL"
                    + " ORDER BY epoch DESC LIMIT 1")) {
      return rs.next() ? java.util.Optional.of(rs.getString(1)) : java.util.Optional.empty();
    } catch (java.sql.SQLException e) {
      return java.util.Optional.empty();
    }
  }

  List<Child> producers() {
    return producers;
  }

  /** The harness's own pool on the campaign's schema. */
  javax.sql.DataSource dataSource() {
    return ds;
  }

  /** The namespaces of the partitions scenario, if it is selected and they could be made. */
  Optional<NetworkPartitions> network() {
    return network;
  }

  /** Why the partitions scenario's namespaces could not be made, if they could not. */
  Optional<String> networkUnavailable() {
    return networkUnavailable;
  }

  /**
   * Why the cluster's brokers cannot be cut off from each other here (they do not run in network
   * namespaces of their own), or empty if they can.
   */
  Optional<String> brokersUnreachable() {
    return brokersUnreachable;
  }

  TransientFailures failures() {
    return failures;
  }

  /** The phase (one per scenario round) the producers are started for. */
  int phase() {
    return phase;
  }

  /** Starts the next phase; returns its number. */
  int nextPhase() {
    return ++phase;
  }

  boolean consumerParking() {
    return consumerParking;
  }

  /** Whether consumers started from now on run with ordered parking. */
  void consumerParking(boolean parking) {
    consumerParking = parking;
  }

  /**
   * Starts PostgreSQL, the broker, the relays and the consumers (the producers wait for a phase).
   */
  void start() throws Exception {
    Path dir = settings.dir();
    out.println("postbox verify: seed " + settings.seed() + ", report directory " + dir);
    if (Scenario.selected(settings.relay(), settings.cluster(), settings.only()).stream()
        .anyMatch(Scenario::partitions)) {
      networkUnavailable = NetworkPartitions.unavailable();
      if (networkUnavailable.isEmpty()) {
        network = Optional.of(NetworkPartitions.create());
        out.println(
            "partitions: "
                + PARTITIONED_RELAY
                + " and "
                + PARTITIONED_CONSUMER
                + " run in network namespaces; PostgreSQL on "
                + network.get().postgresAddress()
                + ", the broker on "
                + network.get().brokerAddress());
      } else {
        out.println("partitions: inconclusive here: " + networkUnavailable.get());
      }
    }
    PostgresServer.Builder pgb =
        PostgresServer.builder()
            .directory(dir.resolve("postgres"))
            .serverConfig("track_commit_timestamp", "on")
            .startupTimeout(Duration.ofMinutes(3));
    KafkaBroker.Builder kb =
        KafkaBroker.builder()
            .dataDirectory(dir.resolve("kafka"))
            .maxHeap("384m")
            .startupTimeout(Duration.ofMinutes(3));
    if (network.isPresent()) {
      pgb.serverConfig("listen_addresses", "127.0.0.1," + network.get().postgresAddress())
          .serverConfig(
              "hba_file", NetworkPartitions.writeHbaFile(dir.resolve("network")).toString());
      kb.host(network.get().brokerAddress());
    }
    if (settings.cluster()) {
      pair =
          FailoverPair.start(
              dir.resolve("postgres-pair"), !settings.asyncStandby(), dir.resolve("journals"));
      pg = pair.current();
    } else {
      pg = pgb.build();
      pg.start();
    }
    if (settings.cluster()) {
      boolean cutOffs =
          Scenario.selected(settings.relay(), true, settings.only()).stream()
              .anyMatch(s -> s.external().contains(Scenario.Fault.CLUSTER_BROKER_CUT_OFF));
      brokersUnreachable =
          cutOffs ? KafkaCluster.whyNoOwnNetworks() : Optional.of("no cut-off scenario selected");
      if (cutOffs) {
        out.println(
            brokersUnreachable
                .map(why -> "cluster-broker-cut-off: inconclusive here: " + why)
                .orElse("cluster-broker-cut-off: each broker runs in its own network namespace"));
      }
      cluster =
          KafkaClusterFaults.start(dir.resolve("kafka-cluster"), brokersUnreachable.isEmpty());
    } else {
      kafka = kb.build();
      kafka.start();
    }
    String bootstrap = cluster != null ? cluster.bootstrapServers() : kafka.bootstrapServers();
    String schema = pg.createSchema("verify");
    ds = pg.dataSource(schema, 4);
    PostboxMigrations.migrate(ds);
    HarnessSchema.create(ds, Campaign.KEYS);
    topic = "verify-" + Long.toUnsignedString(settings.seed(), 36);
    if (cluster != null) {
      cluster.createTopic(topic, Campaign.PARTITIONS); // replication factor 3, min ISR 2
    } else {
      kafka.createTopic(topic, Campaign.PARTITIONS);
    }
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    ap.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
    ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
    admin = Admin.create(ap);
    reader = new TopicReader(bootstrap, topic, Campaign.PARTITIONS);
    checker =
        new HistoryChecker(ds, admin, reader, topic, Campaign.PARTITIONS, Campaign.GROUP, log);
    checker.relayMode(settings.relay());
    if (pair != null) {
      checker.commitJournals(pair.journals(), !pair.synchronous());
    }
    checker.consumerMode(settings.consumerMode());
    fleet = new Fleet(log);
    failures = new TransientFailures(ds, log);
    String jdbcUrl =
        network
            .map(n -> pg.jdbcUrl(schema).replace("//127.0.0.1:", "//" + n.postgresAddress() + ":"))
            .orElse(pg.jdbcUrl(schema));
    Path logs = dir.resolve("logs");
    for (int i = 0; i < Campaign.PRODUCERS; i++) {
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
                          Double.toString(settings.rate() / Campaign.PRODUCERS),
                          "3",
                          Integer.toString(Campaign.KEYS),
                          Integer.toString(Campaign.HOT_KEYS),
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
    for (int i = 0; i < Campaign.RELAYS; i++) {
      String name = "relay-" + (char) ('a' + i);
      fleet.add(
          name,
          Role.RELAY,
          (incarnation, instance) ->
              inNamespace(
                      Fleet.jvm(RelayMain.class, logs, name, "128m"),
                      name,
                      NetworkPartitions.Cut.RELAY_FROM_POSTGRES)
                  .args(
                      jdbcUrl,
                      bootstrap,
                      instance,
                      Integer.toString(Campaign.LEASE_MS),
                      // CDC: small batches, so that batches end inside multi-event transactions
                      settings.relay() == RelayMode.CDC ? "4" : "100",
                      settings.relay() == RelayMode.TRANSACTIONAL ? topic : "",
                      settings.relay() == RelayMode.CDC ? "cdc" : "",
                      "", // no RabbitMQ nodes
                      // on the pair: the CDC slot is a failover slot the standby keeps a copy of
                      pair != null ? "failover-slot" : ""));
    }
    for (int i = 1; i <= Campaign.CONSUMERS; i++) {
      String name = "consumer-" + i;
      // consumers 1 and 2 are static members (a restart takes their partitions back at once); the
      // last one is dynamic, so its restarts make the group rebalance and revoke partitions
      boolean staticMember = i < Campaign.CONSUMERS;
      fleet.add(
          name,
          Role.CONSUMER,
          (incarnation, instance) ->
              inNamespace(
                      Fleet.jvm(ConsumerMain.class, logs, name, "160m"),
                      name,
                      NetworkPartitions.Cut.CONSUMER_FROM_BROKER)
                  // its assignment, revocations and membership-fence waits, and its state file
                  .jvmOptions("-Dorg.slf4j.simpleLogger.log.dev.postbox.kafka=info")
                  .systemProperty(ConsumerStateFile.PROPERTY, stateFile(name).toString())
                  .args(
                      jdbcUrl,
                      bootstrap,
                      topic,
                      Campaign.GROUP,
                      instance,
                      Integer.toString(Campaign.SESSION_MS),
                      Integer.toString(Campaign.IDLE_IN_TX_MS),
                      staticMember ? name : "",
                      consumerParking
                          ? "parking"
                          : settings.consumerMode() == ConsumerMode.OFFSETS ? "offsets" : "",
                      pair != null ? pair.journal(instance, AppliedJournal.SUFFIX) : ""));
    }
    for (Child c : fleet.children()) {
      if (c.role() != Role.PRODUCER) {
        fleet.want(c);
      }
    }
    fleet.awaitStarted(Duration.ofMinutes(2));
    out.println(
        "started: PostgreSQL"
            + (pair != null ? " with " + pair.standbyKind() + ", " : ", ")
            + (cluster != null
                ? "Kafka cluster of " + cluster.size() + " brokers (KRaft, combined mode), "
                : "Kafka broker, ")
            + Campaign.RELAYS
            + " "
            + settings.relay().cliName()
            + " relays, "
            + Campaign.CONSUMERS
            + " consumers ("
            + settings.consumerMode().cliName()
            + " mode; topic "
            + topic
            + ", "
            + Campaign.PARTITIONS
            + " partitions)");
  }

  /** Runs the partitioned relay or consumer in its namespace (when there are namespaces). */
  private ChildJvm.Builder inNamespace(ChildJvm.Builder b, String name, NetworkPartitions.Cut cut) {
    boolean partitioned =
        cut == NetworkPartitions.Cut.RELAY_FROM_POSTGRES
            ? name.equals(PARTITIONED_RELAY)
            : name.equals(PARTITIONED_CONSUMER);
    if (network.isPresent() && partitioned) {
      b.launcher(network.get().launcher(cut));
    }
    return b;
  }

  Path stateFile(String consumer) {
    return settings.dir().resolve("logs").resolve(consumer + ".state");
  }

  /**
   * Starts PostgreSQL and the broker if they are down (on a cluster: thaws frozen brokers and
   * starts stopped ones), retrying (a machine under load can take longer than one start-up
   * timeout).
   */
  synchronized void ensureUp() {
    for (int attempt = 1; ; attempt++) {
      try {
        PostgresServer primary = primaryServer();
        if (!primary.isRunning()) {
          primary.start();
        }
        if (cluster != null) {
          cluster.heal();
        } else if (!kafka.isRunning()) {
          kafka.start();
        }
        return;
      } catch (RuntimeException e) {
        log.note("start-retry", "attempt " + attempt + ": " + e.getMessage());
        if (attempt >= 5) {
          throw e;
        }
        if (kafka != null && kafka.isRunning()) {
          kafka.kill(); // a broker that did not become ready: start it afresh
        }
      }
    }
  }

  /** When PostgreSQL's postmaster started, or empty if it cannot be asked (it is down). */
  Optional<Instant> postmasterStart() {
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT pg_postmaster_start_time()")) {
      rs.next();
      Timestamp t = rs.getTimestamp(1);
      return Optional.of(t.toInstant());
    } catch (Exception e) {
      return Optional.empty();
    }
  }

  /** Kills the processes and stops the servers. */
  @Override
  public void close() {
    if (fleet != null) {
      fleet.close();
    }
    if (reader != null) {
      reader.close();
    }
    if (admin != null) {
      admin.close(Duration.ofSeconds(2));
    }
    if (ds != null) {
      ds.close();
    }
    if (kafka != null) {
      kafka.close();
    }
    if (cluster != null) {
      // kill -9 first: a clean stop of the last combined node waits for a lost quorum
      for (int i = 0; i < cluster.size(); i++) {
        cluster.kill(i);
      }
      cluster.close();
    }
    if (pair != null) {
      pair.close();
    } else if (pg != null) {
      pg.close();
    }
    network.ifPresent(NetworkPartitions::close);
  }
}
