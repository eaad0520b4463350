package dev.postbox.testkit;

import dev.postbox.testkit.internal.EmbeddedPostgresPair;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A PostgreSQL primary with a streaming standby, both embedded (the zonky PostgreSQL 18 bundle),
 * for failover tests: {@link #killPrimary()} ({@code SIGKILL} to the primary's processes), then
 * {@link #promote()} makes the standby the primary.
 *
 * <p>The bundle has no {@code pg_basebackup}, so {@link #start()} takes the standby's base backup
 * with the server's low-level API over JDBC ({@code pg_backup_start}, a copy of the data directory
 * without {@code postmaster.pid}, {@code pg_wal} and {@code pg_replslot} contents, {@code
 * pg_backup_stop} and its {@code backup_label}). The standby streams through the physical slot
 * {@value #PHYSICAL_SLOT} and runs with {@code hot_standby_feedback=on} and {@code
 * sync_replication_slots=on}, and the primary with {@code synchronized_standby_slots} naming that
 * slot: logical slots created with {@code failover => true} are synchronised to the standby (its
 * {@code pg_replication_slots.synced}) and no logical decoding on the primary runs ahead of the
 * standby. Replication is asynchronous by default; {@link Builder#synchronous(boolean)} makes the
 * standby synchronous ({@code synchronous_standby_names}, with the default {@code
 * synchronous_commit=on}: a commit returns once the standby has flushed its WAL).
 *
 * <p>{@link #current()} is a {@link PostgresServer} whose JDBC URL names both servers with {@code
 * targetServerType=primary} (pgjdbc's multi-host URL): its schemas, pools and URLs reach whichever
 * server is the primary, before and after a promote. A promote swaps the roles, and {@link
 * #rejoin()} makes the former primary a standby of the new one, so a pair fails over as often as a
 * test asks. Thread-safe.
 */
public interface PostgresPair extends AutoCloseable {

  /** The physical replication slot the standby streams from. */
  String PHYSICAL_SLOT = "postbox_standby";

  /** The standby's {@code application_name}, as {@code synchronous_standby_names} names it. */
  String STANDBY_NAME = "postbox_standby";

  /** An asynchronous pair, not started yet. */
  static PostgresPair embedded() {
    return builder().build();
  }

  /** A builder for a pair. */
  static Builder builder() {
    return new Builder();
  }

  /**
   * Starts the primary, takes the base backup, starts the standby and waits until it streams. Does
   * nothing if the pair was started.
   *
   * @throws InfrastructureStartupException if either server could not be started
   */
  void start();

  /** The server that was the primary at {@link #start()} (its own URL, no failover). */
  PostgresServer primary();

  /** The server that was the standby at {@link #start()} (its own URL, no failover). */
  PostgresServer standby();

  /**
   * The server that is the primary now: {@link #primary()} until the first {@link #promote()}, then
   * the promoted one (its own URL; its lifecycle methods act on that server).
   */
  PostgresServer activePrimary();

  /**
   * The current primary, through a multi-host JDBC URL ({@code targetServerType=primary}); its
   * lifecycle methods ({@code start}, {@code stop}, {@code crash}, ...) throw {@link
   * UnsupportedOperationException}.
   */
  PostgresServer current();

  /**
   * {@code kill -9} of the {@linkplain #activePrimary() active primary}'s postmaster and every one
   * of its server processes.
   */
  void killPrimary();

  /**
   * Promotes the standby ({@code SELECT pg_promote()}) and waits until it accepts writes; it is the
   * {@linkplain #activePrimary() active primary} from then on. The former primary must be down
   * (killed or stopped) first: nothing here fences it.
   *
   * @throws IllegalStateException if it did not within the timeout
   */
  void promote();

  /**
   * Makes the server a {@link #promote()} left behind a streaming standby of the active primary: it
   * is killed if it runs, its data directory is replaced by a fresh base backup of the active
   * primary (a physical slot made there first), and once it streams the active primary names it as
   * its synchronised standby slot and, in a synchronous pair, its synchronous standby. Until then
   * the promoted server waits for no standby (commits and logical decoding go on, as with Patroni's
   * non-strict synchronous mode). Logical failover slots are synchronised to it again by its slot
   * synchronisation worker.
   *
   * @throws IllegalStateException if the pair was not started, or the standby did not stream
   */
  void rejoin();

  /**
   * Waits until the standby has replayed all the WAL the primary has written so far.
   *
   * @throws IllegalStateException if it did not within {@code timeout}
   */
  void awaitReplayed(Duration timeout);

  /** Stops both servers and deletes their data directories. Idempotent. */
  @Override
  void close();

  /** Configures a {@link PostgresPair}. Not thread-safe. */
  final class Builder {
    private boolean synchronous;
    private Duration startupTimeout = Duration.ofSeconds(120);
    private final Map<String, String> serverConfig = new LinkedHashMap<>();
    private Optional<Path> directory = Optional.empty();

    private Builder() {}

    /**
     * Whether the standby is synchronous ({@code synchronous_standby_names}): then a commit the
     * primary acknowledged survives its loss. Default false (asynchronous: the last commits the
     * standby had not received are lost with the primary).
     */
    public Builder synchronous(boolean synchronous) {
      this.synchronous = synchronous;
      return this;
    }

    /** How long {@link PostgresPair#start()} waits for each step; default 120 s. */
    public Builder startupTimeout(Duration timeout) {
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("startupTimeout must be positive, got " + timeout);
      }
      this.startupTimeout = timeout;
      return this;
    }

    /** A server setting ({@code postgres -c name=value}) for both servers. */
    public Builder serverConfig(String name, String value) {
      if (name == null || name.isBlank() || value == null) {
        throw new IllegalArgumentException("serverConfig needs a name and a value");
      }
      serverConfig.put(name, value);
      return this;
    }

    /**
     * Where the two servers keep their data and logs ({@code a} and {@code b} under it), kept after
     * {@link PostgresPair#close()}; default a folder of the test kit's, deleted at close.
     */
    public Builder directory(Path directory) {
      this.directory = Optional.of(Objects.requireNonNull(directory, "directory"));
      return this;
    }

    /** A pair with this configuration, not started yet. */
    public PostgresPair build() {
      return new EmbeddedPostgresPair(synchronous, startupTimeout, serverConfig, directory);
    }
  }
}
