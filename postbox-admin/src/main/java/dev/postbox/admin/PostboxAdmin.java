package dev.postbox.admin;

import dev.postbox.admin.internal.AuditQueries;
import dev.postbox.admin.internal.DeadLetterQueries;
import dev.postbox.admin.internal.OperationsQueries;
import dev.postbox.admin.internal.ReplayJobQueries;
import dev.postbox.admin.internal.ReplayJobWork;
import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.core.time.Sleeper;
import dev.postbox.jdbc.MessageTracer;
import dev.postbox.jdbc.OperationsProbe;
import dev.postbox.jdbc.OutboxOperations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.Replayer;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * The operations API over the Postbox tables of one database schema: what the {@code ./postbox}
 * operator commands and the web console read and do. Reads return records and pages (keyset
 * cursors, stable while rows are added); every action names its actor ({@link #as(String)}) and
 * goes through the audited, rate-limited {@link Replayer}.
 *
 * <pre>{@code
 * PostboxAdmin admin = PostboxAdmin.builder(dataSource)
 *     .decoder(KafkaDeadLetters.decoder())     // how a dead letter's message is read back
 *     .build();
 * Page<DeadLetterGroup> failing = admin.groups(
 *     DeadLetterFilter.builder().status(Status.PENDING).build(), PageRequest.first(20));
 * DeadLetterDetail letter = admin.deadLetter(17).orElseThrow();
 * admin.as("alice").replay(17);
 * }</pre>
 *
 * <p><b>Queries.</b> Dead letters newest first (first failure, then id), groups by the newest last
 * failure; every filter is served by an index (migrations V3 and V12). Ages are measured on the
 * database's clock.
 *
 * <p><b>Errors.</b> A database failure throws {@link AdminException} (reads) or the jdbc module's
 * exceptions (actions); an unknown id or key {@link java.util.NoSuchElementException}; an action on
 * something in the wrong state (a letter not PENDING, a key a consumer is retrying at this moment)
 * {@link IllegalStateException}; bad input {@link IllegalArgumentException}. A front end maps them
 * to 404, 409 and 400.
 *
 * <p><b>Replay jobs.</b> A bulk replay too large for one call is a job kept in the database
 * (migration V20): {@link #previewReplay} shows what a selection covers, {@link
 * OperatorActions#startReplayJob} starts it (a reason; above {@link
 * Builder#replayJobConfirmAbove(int)} letters their count typed), and a {@link ReplayJobRunner}
 * works it letter by letter through {@link OperatorActions#replay}, resumable by any runner of the
 * database after a restart.
 *
 * <p>Defaults: the replayer's ({@link Replayer#DEFAULT_RATE_PER_SECOND} writes per second, at most
 * {@link Replayer#DEFAULT_MAX_REPLAYS} replays per message), no decoder (replays and edits fail
 * until one is set), no lag source. Thread-safe.
 */
public final class PostboxAdmin {

  /** The most letters one group action (replay or discard) covers. */
  public static final int MAX_GROUP_ACTION = PostgresDeadLetterStore.MAX_LIMIT;

  /** Replay jobs of more letters than this need the typed confirmation, by default. */
  public static final int DEFAULT_REPLAY_JOB_CONFIRM_ABOVE = 100;

  /** The most letters one replay job covers, by default. */
  public static final int DEFAULT_REPLAY_JOB_MAX_LETTERS = 100_000;

  /** How long a runner holds a replay job without working a letter of it, by default. */
  public static final Duration DEFAULT_REPLAY_JOB_LEASE = Duration.ofSeconds(30);

  private final DataSource dataSource;
  private final Replayer replayer;
  private final Optional<ConsumerLagSource> lagSource;
  private final Optional<QueueLagSource> queueLagSource;
  private final AuditQueries audit;
  private final DeadLetterQueries deadLetters;
  private final OperationsQueries operations;
  private final MessageTracer tracer;
  private final OperationsProbe probe;
  private final ReplayJobQueries jobs;
  private final Clock clock;
  private final Sleeper sleeper;
  private final Duration jobLease;

  private PostboxAdmin(Builder b, Replayer replayer) {
    this.dataSource = b.dataSource;
    this.replayer = replayer;
    this.lagSource = b.lagSource;
    this.queueLagSource = b.queueLagSource;
    this.audit = new AuditQueries(dataSource);
    this.deadLetters = new DeadLetterQueries(dataSource, audit);
    this.operations = new OperationsQueries(dataSource);
    this.tracer = MessageTracer.postgres(dataSource);
    this.probe = OperationsProbe.postgres(dataSource);
    this.jobs =
        new ReplayJobQueries(dataSource, b.clock, b.replayJobConfirmAbove, b.replayJobMaxLetters);
    this.clock = b.clock;
    this.sleeper = b.sleeper;
    this.jobLease = b.replayJobLease;
  }

  /** A builder for the tables in {@code dataSource}'s current schema. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** Dead letters grouped by fingerprint, newest last failure first. */
  public Page<DeadLetterGroup> groups(DeadLetterFilter filter, PageRequest page) {
    return deadLetters.groups(Objects.requireNonNull(filter), Objects.requireNonNull(page));
  }

  /** Dead letters, newest first failure first. */
  public Page<DeadLetterSummary> deadLetters(DeadLetterFilter filter, PageRequest page) {
    return deadLetters.list(Objects.requireNonNull(filter), Objects.requireNonNull(page));
  }

  /** One dead letter with headers, payload, stack trace, history, audit and trace. */
  public Optional<DeadLetterDetail> deadLetter(long id) {
    return deadLetters.detail(id, tracer);
  }

  /** The trace of one message through every Postbox table. */
  public dev.postbox.jdbc.MessageTrace trace(java.util.UUID messageId) {
    return tracer.trace(Objects.requireNonNull(messageId, "messageId"));
  }

  /** Parked keys of {@code consumer} (or every consumer), by consumer and key. */
  public Page<ParkedKey> parkedKeys(Optional<String> consumer, PageRequest page) {
    return operations.parkedKeys(Objects.requireNonNull(consumer), Objects.requireNonNull(page));
  }

  /** Outbox rows that hold their key or topic, with what waits behind each. */
  public List<OutboxOperations.HoldingRow> blockedOutboxRows() {
    return OutboxOperations.postgres(dataSource).holding();
  }

  /** Outbox rows the relay gave up on (holding or not), newest first. */
  public Page<FailedOutboxRow> failedOutboxRows(PageRequest page) {
    return operations.failedOutboxRows(Objects.requireNonNull(page));
  }

  /**
   * The outbox backlog and the age of the oldest pending row, failed and holding rows, pending dead
   * letters and parked keys with their oldest ages.
   */
  public OperationsProbe.Snapshot outboxStatus() {
    return probe.snapshot();
  }

  /** Relay instances and lanes. */
  public RelayStatus relays() {
    return operations.relays();
  }

  /**
   * Consumer lag as age (from the lag source, if any), the queues' backlog (from the queue lag
   * source, if any) and what waits per consumer.
   */
  public LagReport lag() {
    return new LagReport(
        lagSource.map(ConsumerLagSource::read).orElse(List.of()),
        operations.backlogs(),
        queueLagSource.map(QueueLagSource::read).orElse(List.of()));
  }

  /** The operator actions, newest first. */
  public Page<AuditEntry> audit(AuditFilter filter, PageRequest page) {
    return audit.list(Objects.requireNonNull(filter), Objects.requireNonNull(page));
  }

  /**
   * The actions of {@code actor} (recorded on every change and audit row). All actors share one
   * rate.
   *
   * @throws IllegalArgumentException if actor is blank
   */
  public OperatorActions as(String actor) {
    return new OperatorActions(replayer.as(actor), deadLetters, audit, jobs);
  }

  /**
   * What a bulk replay of {@code selection} would cover now: its PENDING letters' count, topics,
   * consumers, oldest and newest, a sample, and whether starting it needs the typed confirmation
   * ({@link OperatorActions#startReplayJob}).
   */
  public ReplayPreview previewReplay(ReplaySelection selection) {
    return jobs.preview(Objects.requireNonNull(selection, "selection"));
  }

  /** One replay job with its progress. */
  public Optional<ReplayJob> replayJob(long id) {
    return jobs.get(id);
  }

  /** The replay jobs, newest first. */
  public Page<ReplayJob> replayJobs(PageRequest page) {
    return jobs.list(Objects.requireNonNull(page, "page"));
  }

  /**
   * A runner of the RUNNING replay jobs named {@code instance} (unique among the runners of this
   * database: a console's host and a random suffix, say), waiting {@code pollInterval} when idle.
   * Not started: {@link ReplayJobRunner#start()} works in the background.
   */
  public ReplayJobRunner replayJobRunner(String instance, Duration pollInterval) {
    Objects.requireNonNull(instance, "instance");
    if (instance.isBlank()) {
      throw new IllegalArgumentException("instance must not be blank");
    }
    if (pollInterval.isNegative() || pollInterval.isZero()) {
      throw new IllegalArgumentException("pollInterval must be positive: " + pollInterval);
    }
    return new ReplayJobRunner(
        instance, new ReplayJobWork(dataSource, clock, jobLease), this::as, sleeper, pollInterval);
  }

  /** Builds a {@link PostboxAdmin}. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private Function<DeadLetter, Message> decoder =
        letter -> {
          throw new IllegalStateException(
              "no decoder configured: PostboxAdmin.builder(...).decoder(...) reads dead letters"
                  + " back into messages (KafkaDeadLetters.decoder() for Kafka records)");
        };
    private double ratePerSecond = Replayer.DEFAULT_RATE_PER_SECOND;
    private int maxReplays = Replayer.DEFAULT_MAX_REPLAYS;
    private Clock clock = Clock.systemUTC();
    private Sleeper sleeper = Sleeper.SYSTEM;
    private Optional<ConsumerLagSource> lagSource = Optional.empty();
    private Optional<QueueLagSource> queueLagSource = Optional.empty();
    private int replayJobConfirmAbove = DEFAULT_REPLAY_JOB_CONFIRM_ABOVE;
    private int replayJobMaxLetters = DEFAULT_REPLAY_JOB_MAX_LETTERS;
    private Duration replayJobLease = DEFAULT_REPLAY_JOB_LEASE;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /** How a dead letter's message is read back for replays and edits (default: none). */
    public Builder decoder(Function<DeadLetter, Message> decoder) {
      this.decoder = Objects.requireNonNull(decoder, "decoder");
      return this;
    }

    /** Writes per second of replays and edits, all actors together (the replayer's default). */
    public Builder ratePerSecond(double ratePerSecond) {
      this.ratePerSecond = ratePerSecond;
      return this;
    }

    /** How often one message may be replayed (the replayer's default). */
    public Builder maxReplays(int maxReplays) {
      this.maxReplays = maxReplays;
      return this;
    }

    /** The clock the rate is measured with (default the system UTC clock). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** How the rate waits (default {@link Sleeper#SYSTEM}). */
    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    /** Where consumer lag as age is measured (default: none; {@link #lag()} then has none). */
    public Builder lagSource(ConsumerLagSource lagSource) {
      this.lagSource = Optional.of(Objects.requireNonNull(lagSource, "lagSource"));
      return this;
    }

    /**
     * Where the backlog of queue-based subscriptions (RabbitMQ) is measured (default: none; {@link
     * #lag()} then has no queues).
     */
    public Builder queueLagSource(QueueLagSource queueLagSource) {
      this.queueLagSource = Optional.of(Objects.requireNonNull(queueLagSource, "queueLagSource"));
      return this;
    }

    /**
     * Replay jobs of more letters than this need the typed confirmation (default {@value
     * PostboxAdmin#DEFAULT_REPLAY_JOB_CONFIRM_ABOVE}; 0: every job).
     */
    public Builder replayJobConfirmAbove(int letters) {
      this.replayJobConfirmAbove = letters;
      return this;
    }

    /** The most letters one replay job covers (default 100,000). */
    public Builder replayJobMaxLetters(int letters) {
      this.replayJobMaxLetters = letters;
      return this;
    }

    /**
     * How long a runner holds a replay job without working a letter of it; a job whose runner
     * stopped is taken over after this (default 30 s). Longer than the time between two letters at
     * the rate.
     */
    public Builder replayJobLease(Duration lease) {
      this.replayJobLease = Objects.requireNonNull(lease, "replayJobLease");
      return this;
    }

    /**
     * Builds the API; checks that the tables exist.
     *
     * @throws IllegalArgumentException if the rate or maxReplays is out of range, or a replay job
     *     setting is (replayJobConfirmAbove negative, replayJobMaxLetters below 1, replayJobLease
     *     not positive)
     * @throws dev.postbox.jdbc.DeadLetterException if the tables are missing or the database cannot
     *     be reached
     */
    public PostboxAdmin build() {
      if (replayJobConfirmAbove < 0) {
        throw new IllegalArgumentException(
            "replayJobConfirmAbove must be 0 or more: " + replayJobConfirmAbove);
      }
      if (replayJobMaxLetters < 1) {
        throw new IllegalArgumentException(
            "replayJobMaxLetters must be at least 1: " + replayJobMaxLetters);
      }
      if (replayJobLease.isNegative() || replayJobLease.isZero()) {
        throw new IllegalArgumentException("replayJobLease must be positive: " + replayJobLease);
      }
      Replayer replayer =
          Replayer.builder(dataSource, PostgresDeadLetterStore.create(dataSource), decoder)
              .ratePerSecond(ratePerSecond)
              .maxReplays(maxReplays)
              .clock(clock)
              .sleeper(sleeper)
              .by("postbox-admin")
              .build();
      return new PostboxAdmin(this, replayer);
    }
  }
}
