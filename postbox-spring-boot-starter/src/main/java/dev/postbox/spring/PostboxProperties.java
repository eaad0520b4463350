package dev.postbox.spring;

import dev.postbox.core.relay.Relay;
import dev.postbox.core.relay.UnpublishableRows;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresRelayStore;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code postbox.*} settings of a Spring application: the delivery table ({@code
 * postbox.topics.<topic>.*}), the transport ({@code postbox.transport}: Kafka or RabbitMQ) and its
 * connection, the relay, the outbox and the migrations. Every default is the library's {@code
 * DEFAULT_*} constant. Bound and checked by {@link PostboxSettingsBinder}, which refuses the whole
 * configuration with one message listing every problem.
 */
@ConfigurationProperties(PostboxProperties.PREFIX)
public class PostboxProperties {

  /** The prefix of every Postbox key. */
  public static final String PREFIX = "postbox";

  /** The delivery table: one entry per topic (use {@code [a.b]} for a topic name with dots). */
  private Map<String, TopicProperties> topics = new LinkedHashMap<>();

  /** The broker the relay publishes to and the consumers read from. */
  private Transport transport = Transport.KAFKA;

  /**
   * Refuse to start when kafka-clients or flyway-core on the class path is older than the version
   * Postbox is built and tested with (Spring Boot's dependency management brings older ones).
   */
  private boolean dependencyCheck = true;

  private final Kafka kafka = new Kafka();
  private final Rabbitmq rabbitmq = new Rabbitmq();
  private final RelaySettings relay = new RelaySettings();
  private final OutboxSettings outbox = new OutboxSettings();
  private final Migrations migrations = new Migrations();
  private final Consumers consumers = new Consumers();

  /**
   * Per-listener settings, by listener id ({@code @PostboxListener(id = ...)}): {@code
   * postbox.listeners.<id>.group}.
   */
  private Map<String, ListenerProperties> listeners = new LinkedHashMap<>();

  public Map<String, TopicProperties> getTopics() {
    return topics;
  }

  public void setTopics(Map<String, TopicProperties> topics) {
    this.topics = topics;
  }

  public Transport getTransport() {
    return transport;
  }

  public void setTransport(Transport transport) {
    this.transport = transport;
  }

  public boolean isDependencyCheck() {
    return dependencyCheck;
  }

  public void setDependencyCheck(boolean dependencyCheck) {
    this.dependencyCheck = dependencyCheck;
  }

  public Kafka getKafka() {
    return kafka;
  }

  public Rabbitmq getRabbitmq() {
    return rabbitmq;
  }

  /** The broker address of the chosen transport (bootstrap servers or AMQP URI); may be blank. */
  String brokerAddress() {
    return transport == Transport.RABBITMQ ? rabbitmq.getUri() : kafka.getBootstrapServers();
  }

  /** The key of {@link #brokerAddress()}. */
  String brokerAddressKey() {
    return transport == Transport.RABBITMQ
        ? "postbox.rabbitmq.uri"
        : "postbox.kafka.bootstrap-servers";
  }

  public RelaySettings getRelay() {
    return relay;
  }

  public OutboxSettings getOutbox() {
    return outbox;
  }

  public Migrations getMigrations() {
    return migrations;
  }

  public Consumers getConsumers() {
    return consumers;
  }

  public Map<String, ListenerProperties> getListeners() {
    return listeners;
  }

  public void setListeners(Map<String, ListenerProperties> listeners) {
    this.listeners = listeners;
  }

  /**
   * The table's row for {@code topic}, or the library defaults for a topic the table leaves out.
   */
  public TopicProperties topic(String topic) {
    return topics.getOrDefault(topic, new TopicProperties());
  }

  /** The Kafka connection. */
  public static class Kafka {
    /**
     * Kafka bootstrap servers (host:port, comma-separated) of the relay and the consumers (blank:
     * spring.kafka.bootstrap-servers).
     */
    private String bootstrapServers = "";

    public String getBootstrapServers() {
      return bootstrapServers;
    }

    /**
     * Kafka client properties for Postbox's clients (relay, listeners, admin look-ups), over those
     * of spring.kafka.* (security.protocol, ssl.*, properties.*); for example sasl.mechanism.
     */
    private Map<String, String> properties = new LinkedHashMap<>();

    /** What {@code spring.kafka.*} sets; filled in by {@link PostboxSettingsBinder}. */
    private Map<String, Object> fromSpring = Map.of();

    public void setBootstrapServers(String bootstrapServers) {
      this.bootstrapServers = bootstrapServers;
    }

    public Map<String, String> getProperties() {
      return properties;
    }

    public void setProperties(Map<String, String> properties) {
      this.properties = properties;
    }

    void fromSpring(Map<String, Object> clientProperties) {
      this.fromSpring = Map.copyOf(clientProperties);
    }

    /**
     * The client properties of every Postbox Kafka client but the bootstrap servers: {@code
     * spring.kafka.*}'s, then {@code postbox.kafka.properties.*} over them.
     */
    public Map<String, Object> clientProperties() {
      Map<String, Object> out = new LinkedHashMap<>(fromSpring);
      out.putAll(properties);
      return out;
    }
  }

  /** The transports the starter wires. */
  public enum Transport {
    /** Apache Kafka ({@code postbox-kafka}, a dependency of the starter). */
    KAFKA,
    /** RabbitMQ ({@code postbox-rabbitmq}, which the application adds). */
    RABBITMQ
  }

  /**
   * The RabbitMQ connection and topology (with {@code postbox.transport: rabbitmq}; see {@code
   * RabbitSubscriber.Builder} and {@code RabbitRelayPublisher.Builder}).
   */
  public static class Rabbitmq {
    /**
     * AMQP URI of the broker: amqp://user:password@host:port/vhost (the vhost "/" is %2F); blank:
     * from spring.rabbitmq.host (or addresses), port, username, password and virtual-host.
     */
    private String uri = "";

    /** Shard queues per subscription and topic; fixed once messages flow (keys hash onto them). */
    private int shards = DEFAULT_SHARDS;

    /** Unacknowledged deliveries per shard queue's channel (basic.qos). */
    private int prefetch = DEFAULT_PREFETCH;

    /** How long the relay waits for a batch's publisher confirms before it counts as failed. */
    private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;

    /**
     * Whether the application's instances share each subscription's shards through leases in
     * PostgreSQL (postbox_shard_lease), about shards/instances each; otherwise the first instance
     * is active on every shard and the others stand by.
     */
    private boolean shardLeases = DEFAULT_SHARD_LEASES;

    /** How long a shard lease lasts without renewal (a stopped instance's shards move after it). */
    private Duration shardLeaseTtl = DEFAULT_SHARD_LEASE_TTL;

    /**
     * Whether each subscriber reports the time of its oldest unfinished delivery per shard queue to
     * PostgreSQL (postbox_consumer_age), so that ./postbox lag and other processes read the age.
     */
    private boolean ageReports = DEFAULT_AGE_REPORTS;

    /** {@code RabbitSubscriber.DEFAULT_SHARDS} (a compile-time constant: no class is loaded). */
    static final int DEFAULT_SHARDS = 4;

    /** {@code RabbitSubscriber.DEFAULT_PREFETCH}. */
    static final int DEFAULT_PREFETCH = 100;

    /** {@code RabbitRelayPublisher.DEFAULT_CONFIRM_TIMEOUT} (RabbitWiringTest checks all three). */
    static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(30);

    /** Default: no shard leases (every instance subscribes to every shard). */
    static final boolean DEFAULT_SHARD_LEASES = false;

    /** {@code RabbitSubscriber.DEFAULT_SHARD_LEASE_TTL} (TransportConfigurationTest checks it). */
    static final Duration DEFAULT_SHARD_LEASE_TTL = Duration.ofSeconds(10);

    /** Default: no age reports (the age is known in the subscriber's process only). */
    static final boolean DEFAULT_AGE_REPORTS = false;

    public String getUri() {
      return uri;
    }

    public void setUri(String uri) {
      this.uri = uri;
    }

    public int getShards() {
      return shards;
    }

    public void setShards(int shards) {
      this.shards = shards;
    }

    public int getPrefetch() {
      return prefetch;
    }

    public void setPrefetch(int prefetch) {
      this.prefetch = prefetch;
    }

    public Duration getConfirmTimeout() {
      return confirmTimeout;
    }

    public void setConfirmTimeout(Duration confirmTimeout) {
      this.confirmTimeout = confirmTimeout;
    }

    public boolean isShardLeases() {
      return shardLeases;
    }

    public void setShardLeases(boolean shardLeases) {
      this.shardLeases = shardLeases;
    }

    public Duration getShardLeaseTtl() {
      return shardLeaseTtl;
    }

    public void setShardLeaseTtl(Duration shardLeaseTtl) {
      this.shardLeaseTtl = shardLeaseTtl;
    }

    public boolean isAgeReports() {
      return ageReports;
    }

    public void setAgeReports(boolean ageReports) {
      this.ageReports = ageReports;
    }

    /** What {@code spring.rabbitmq.*} adds: further addresses and TLS. */
    private RabbitClientSettings fromSpring = RabbitClientSettings.NONE;

    void fromSpring(RabbitClientSettings settings) {
      this.fromSpring = java.util.Objects.requireNonNull(settings, "settings");
    }

    /** What {@code spring.rabbitmq.*} adds to {@link #getUri()}: further addresses and TLS. */
    RabbitClientSettings fromSpring() {
      return fromSpring;
    }
  }

  /** The relay that publishes the outbox (see {@code Relay.Builder}). */
  public static class RelaySettings {
    /** Whether this application runs a relay. */
    private boolean enabled = true;

    /** Unique id among live relays; empty: host, pid and a random suffix. */
    private String instanceId = "";

    /** Rows claimed and published per batch. */
    private int batchSize = Relay.DEFAULT_BATCH_SIZE;

    /** How long a lane lease lasts without renewal (failover time after a crash). */
    private Duration leaseTtl = Relay.DEFAULT_LEASE_TTL;

    /** Longest wait for new rows when no NOTIFY arrives. */
    private Duration pollInterval = Relay.DEFAULT_POLL_INTERVAL;

    /** How long the relay keeps claiming at short intervals after its last rows before idling. */
    private Duration idleGrace = Relay.DEFAULT_IDLE_GRACE;

    /** How long published rows are kept; zero deletes them on publish. */
    private Duration retention = Relay.DEFAULT_RETENTION;

    /** How often old published rows are deleted. */
    private Duration purgeInterval = Relay.DEFAULT_PURGE_INTERVAL;

    /** How long stopping waits for the batch in flight. */
    private Duration shutdownTimeout = Relay.DEFAULT_SHUTDOWN_TIMEOUT;

    /** Age of the oldest pending row above which the relay counts as stuck. */
    private Duration stuckThreshold = Relay.DEFAULT_STUCK_THRESHOLD;

    /** What a row that cannot be published does: hold its key (or topic), or be skipped. */
    private UnpublishableRows unpublishableRows = Relay.DEFAULT_UNPUBLISHABLE_ROWS;

    /** Whether the relay waits for NOTIFY on new rows (one connection held for LISTEN). */
    private boolean notifications = PostgresRelayStore.DEFAULT_NOTIFICATIONS;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public String getInstanceId() {
      return instanceId;
    }

    public void setInstanceId(String instanceId) {
      this.instanceId = instanceId;
    }

    public int getBatchSize() {
      return batchSize;
    }

    public void setBatchSize(int batchSize) {
      this.batchSize = batchSize;
    }

    public Duration getLeaseTtl() {
      return leaseTtl;
    }

    public void setLeaseTtl(Duration leaseTtl) {
      this.leaseTtl = leaseTtl;
    }

    public Duration getPollInterval() {
      return pollInterval;
    }

    public void setPollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
    }

    public Duration getIdleGrace() {
      return idleGrace;
    }

    public void setIdleGrace(Duration idleGrace) {
      this.idleGrace = idleGrace;
    }

    public Duration getRetention() {
      return retention;
    }

    public void setRetention(Duration retention) {
      this.retention = retention;
    }

    public Duration getPurgeInterval() {
      return purgeInterval;
    }

    public void setPurgeInterval(Duration purgeInterval) {
      this.purgeInterval = purgeInterval;
    }

    public Duration getShutdownTimeout() {
      return shutdownTimeout;
    }

    public void setShutdownTimeout(Duration shutdownTimeout) {
      this.shutdownTimeout = shutdownTimeout;
    }

    public Duration getStuckThreshold() {
      return stuckThreshold;
    }

    public void setStuckThreshold(Duration stuckThreshold) {
      this.stuckThreshold = stuckThreshold;
    }

    public UnpublishableRows getUnpublishableRows() {
      return unpublishableRows;
    }

    public void setUnpublishableRows(UnpublishableRows unpublishableRows) {
      this.unpublishableRows = unpublishableRows;
    }

    public boolean isNotifications() {
      return notifications;
    }

    public void setNotifications(boolean notifications) {
      this.notifications = notifications;
    }
  }

  /** The outbox writer (see {@code Outbox.Builder}). */
  public static class OutboxSettings {
    /** Whether writers of one key serialise on an advisory lock (position order = commit order). */
    private boolean keyLocking = Outbox.DEFAULT_KEY_LOCKING;

    public boolean isKeyLocking() {
      return keyLocking;
    }

    public void setKeyLocking(boolean keyLocking) {
      this.keyLocking = keyLocking;
    }
  }

  /** Postbox's own schema migrations ({@code PostboxMigrations}). */
  public static class Migrations {
    /** Whether Postbox migrates its tables ({@code postbox_*}) at start-up. */
    private boolean enabled = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** The consumers' transactions, connections and first read. */
  public static class Consumers {
    /** Where a consumer group with no committed offsets starts reading a topic. */
    public enum StartFrom {
      /** Only what is written after the group first joined: nothing already on the topic. */
      LATEST,
      /** The beginning of the topic (everything the broker still keeps). */
      EARLIEST
    }

    /**
     * What to do when an effectively-once listener writes outside its transaction (REQUIRES_NEW,
     * another DataSource).
     */
    public enum EscapedWrites {
      /** Log it once per listener (and kind), naming the listener; the message is applied. */
      WARN,
      /** Fail the attempt, permanently (not retried): the message goes to the failure path. */
      FAIL
    }

    /**
     * The bean name of the PlatformTransactionManager that runs the effectively-once listeners'
     * transactions (blank: the application's only one, or its primary one).
     */
    private String transactionManager = "";

    /**
     * Connections of the pool left to the application beyond the listeners' concurrency and the
     * relay, checked at start-up against HikariCP's maximum pool size.
     */
    private int poolHeadroom = DEFAULT_POOL_HEADROOM;

    /**
     * Where a listener's consumer group starts when it has no committed offsets (a new or renamed
     * group): latest (the default) or earliest. Kafka only.
     */
    private StartFrom startFrom = StartFrom.LATEST;

    /**
     * What to do when an effectively-once listener writes outside its transaction (a REQUIRES_NEW
     * or NOT_SUPPORTED transaction, another DataSource through Spring): warn (the default: logged
     * once per listener) or fail (the attempt fails permanently; for tests and strict services).
     */
    private EscapedWrites escapedWrites = EscapedWrites.WARN;

    /** Two connections for the application's own requests while every listener is busy. */
    static final int DEFAULT_POOL_HEADROOM = 2;

    public String getTransactionManager() {
      return transactionManager;
    }

    public void setTransactionManager(String transactionManager) {
      this.transactionManager = transactionManager;
    }

    public int getPoolHeadroom() {
      return poolHeadroom;
    }

    public void setPoolHeadroom(int poolHeadroom) {
      this.poolHeadroom = poolHeadroom;
    }

    public StartFrom getStartFrom() {
      return startFrom;
    }

    public void setStartFrom(StartFrom startFrom) {
      this.startFrom = startFrom;
    }

    public EscapedWrites getEscapedWrites() {
      return escapedWrites;
    }

    public void setEscapedWrites(EscapedWrites escapedWrites) {
      this.escapedWrites = escapedWrites;
    }
  }

  /** One listener's settings ({@code postbox.listeners.<id>.*}). */
  public static class ListenerProperties {
    /**
     * The listener's consumer group, which is also its inbox consumer name (blank: the listener's
     * id).
     */
    private String group = "";

    public String getGroup() {
      return group;
    }

    public void setGroup(String group) {
      this.group = group;
    }
  }
}
