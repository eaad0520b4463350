package dev.postbox.testkit;

import dev.postbox.testkit.internal.EmbeddedKafkaBroker;
import dev.postbox.testkit.internal.ExternalKafkaBroker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A Kafka broker for tests: either a real single-node KRaft broker (Kafka 4.4, combined broker and
 * controller) running in its own JVM, which a test can kill with {@code kill -9}, freeze and
 * restart; or an external broker given by its bootstrap servers, which a test can only use.
 *
 * <p>{@link #embedded()} or {@link #builder()} creates an embedded broker that is not started yet.
 * Defaults: a new temporary data directory (deleted by {@link #close()}), listeners on {@code
 * 127.0.0.1} on free ports chosen at the first start and kept across restarts, heap {@code
 * -Xmx512m}, a start-up timeout of 90 seconds, replication factor 1 and min ISR 1 for the internal
 * topics, {@code auto.create.topics.enable=false}, {@code num.partitions=1}, {@code
 * group.initial.rebalance.delay.ms=0}, and short broker session timeouts so that a restart after
 * {@code kill -9} takes seconds. The broker logs warnings and the line {@code Kafka Server started}
 * to {@code broker.log} in its data directory.
 *
 * <p>The broker's JVM dies with this JVM, even if this one is killed with {@code kill -9}.
 *
 * <p>Implementations are thread-safe.
 */
public interface KafkaBroker extends AutoCloseable {

  /** An embedded broker with the defaults, not started yet. */
  static KafkaBroker embedded() {
    return builder().build();
  }

  /** A builder for an embedded broker. */
  static Builder builder() {
    return new Builder();
  }

  /**
   * An external broker, already running. Its lifecycle methods ({@link #kill()}, {@link #stop()},
   * {@link #restart()}, {@link #pause()}, {@link #resume()}) throw {@link
   * UnsupportedOperationException}; {@link #start()} and {@link #close()} do nothing.
   */
  static KafkaBroker external(String bootstrapServers) {
    return new ExternalKafkaBroker(bootstrapServers);
  }

  /**
   * The bootstrap servers ({@code 127.0.0.1:<port>} for an embedded broker).
   *
   * @throws IllegalStateException if the embedded broker was never started (its port is chosen at
   *     the first start)
   */
  String bootstrapServers();

  /** Whether this is an external broker (no lifecycle control). */
  boolean isExternal();

  /**
   * Starts the broker (formatting its storage at the first start) and waits until it is ready: it
   * logged {@code Kafka Server started} and answers {@code describeCluster}. Does nothing if it is
   * running already.
   *
   * @throws InfrastructureStartupException if it did not become ready in time
   * @throws BrokerClassPathException if the broker's jars cannot be found
   */
  void start();

  /**
   * Stops the broker cleanly ({@code SIGTERM}, controlled shutdown), keeping its data; {@code kill
   * -9} if it is still running after 30 seconds.
   */
  void stop();

  /** Kills the broker's JVM with {@code kill -9}, keeping its data, and waits until it is gone. */
  void kill();

  /** {@link #stop()} if it is running, then {@link #start()}: same ports, same data. */
  void restart();

  /**
   * Freezes the broker's JVM with {@code SIGSTOP}: clients see timeouts, not refused connections.
   */
  void pause();

  /** Continues a {@linkplain #pause() paused} broker with {@code SIGCONT}. */
  void resume();

  /** Whether the broker's JVM is running (also when paused); always true for an external broker. */
  boolean isRunning();

  /** Whether the broker is {@linkplain #pause() paused}; always false for an external broker. */
  boolean isPaused();

  /**
   * Creates a topic with replication factor 1 and waits until every partition has a leader.
   *
   * @throws org.apache.kafka.common.errors.TopicExistsException if it exists already
   */
  void createTopic(String name, int partitions);

  /**
   * Creates a topic with replication factor 1 and the given topic configuration (for example {@code
   * cleanup.policy}) and waits until every partition has a leader.
   */
  void createTopic(String name, int partitions, Map<String, String> config);

  /** The data directory of an embedded broker. */
  Optional<Path> dataDirectory();

  /** The log file of an embedded broker (its standard output and standard error). */
  Optional<Path> log();

  /**
   * The SASL_SSL listener (SCRAM-SHA-512 over TLS) of an embedded broker built with {@link
   * Builder#saslSsl}; empty otherwise.
   *
   * @throws IllegalStateException if the embedded broker was never started
   */
  default Optional<KafkaSaslSslListener> saslSsl() {
    return Optional.empty();
  }

  /** How long the last {@link #start()} took until the broker was ready, if it ever started. */
  Optional<Duration> lastStartupTime();

  /**
   * Stops the broker and deletes its data directory if it was a temporary one (then the broker is
   * just killed, as its data is discarded anyway). Idempotent; the broker cannot be started again.
   */
  @Override
  void close();

  /**
   * Configures an embedded {@link KafkaBroker}. Not thread-safe; {@link #build()} copies
   * everything.
   */
  final class Builder {
    private Optional<Path> dataDirectory = Optional.empty();
    private String maxHeap = "512m";
    private Duration startupTimeout = Duration.ofSeconds(90);
    private final Map<String, String> brokerProperties = new LinkedHashMap<>();
    private final List<String> jvmOptions = new ArrayList<>();
    private Optional<String> classPath = Optional.empty();
    private String host = "127.0.0.1";
    private Optional<String[]> scramUser = Optional.empty();

    private Builder() {}

    /**
     * The address the broker listens on and advertises (default {@code 127.0.0.1}): for example an
     * address of a veth interface, so that processes in another network namespace can reach it.
     */
    public Builder host(String host) {
      this.host = Objects.requireNonNull(host);
      return this;
    }

    /**
     * Adds a SASL_SSL listener (TLS with a self-signed certificate generated at the first start,
     * SCRAM-SHA-512 with the user {@code username}, created when the storage is formatted) next to
     * the plaintext one, which the broker itself and {@link KafkaBroker#createTopic} keep using.
     * See {@link KafkaBroker#saslSsl()}.
     */
    public Builder saslSsl(String username, String password) {
      if (!username.matches("[A-Za-z0-9._-]{1,64}") || !password.matches("[A-Za-z0-9._-]{1,64}")) {
        throw new IllegalArgumentException(
            "the SCRAM user and password must be 1 to 64 characters of [A-Za-z0-9._-]");
      }
      this.scramUser = Optional.of(new String[] {username, password});
      return this;
    }

    /**
     * The data directory (configuration, log, partitions). Default: a new temporary directory,
     * deleted by {@link KafkaBroker#close()}; a directory given here is kept.
     */
    public Builder dataDirectory(Path dir) {
      this.dataDirectory = Optional.of(dir);
      return this;
    }

    /** The broker JVM's maximum heap, as for {@code -Xmx}; default {@code 512m}. */
    public Builder maxHeap(String maxHeap) {
      this.maxHeap = Objects.requireNonNull(maxHeap);
      return this;
    }

    /** How long {@link KafkaBroker#start()} waits for the broker to be ready; default 90 s. */
    public Builder startupTimeout(Duration timeout) {
      this.startupTimeout = Objects.requireNonNull(timeout);
      return this;
    }

    /** Adds or overrides a broker setting in {@code server.properties}. */
    public Builder brokerProperty(String name, String value) {
      brokerProperties.put(Objects.requireNonNull(name), Objects.requireNonNull(value));
      return this;
    }

    /** Appends options for the broker's JVM. */
    public Builder jvmOptions(String... options) {
      jvmOptions.addAll(List.of(options));
      return this;
    }

    /**
     * The broker's class path. Default: environment variable {@code POSTBOX_KAFKA_CLASSPATH} if
     * set, else the jars recorded by {@code postbox-testkit-broker} in the local Maven repository.
     */
    public Builder classPath(String classPath) {
      this.classPath = Optional.of(classPath);
      return this;
    }

    /** An embedded broker with this configuration, not started yet. */
    public KafkaBroker build() {
      return new EmbeddedKafkaBroker(
          new EmbeddedKafkaBroker.Settings(
              dataDirectory,
              maxHeap,
              startupTimeout,
              Map.copyOf(brokerProperties),
              List.copyOf(jvmOptions),
              classPath,
              host,
              scramUser.map(u -> u[0]),
              scramUser.map(u -> u[1])));
    }
  }
}
