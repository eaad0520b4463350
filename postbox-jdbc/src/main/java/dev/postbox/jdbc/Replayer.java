package dev.postbox.jdbc;

import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.core.spi.DeadLetterStore.Query;
import dev.postbox.core.spi.DeadLetterStore.Status;
import dev.postbox.core.time.Sleeper;
import dev.postbox.jdbc.LetterActions.Outcome;
import dev.postbox.jdbc.internal.Pacer;
import dev.postbox.jdbc.internal.PostgresDeadLetterStoreImpl;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * Replays dead letters by writing their original message into the {@link Outbox} again: the relay
 * publishes it reliably, and the consumer's inbox dedupes it if it was applied after all.
 *
 * <p><b>Targeted by default.</b> A replay is for the consumer that dead-lettered the message (the
 * letter's consumer), not for the other consumers of its topic, which applied it long ago: the copy
 * carries the {@link dev.postbox.core.ReplayHeaders} (the letter's id, the operator, and the target
 * consumer), the relay publishes it to the consumer's own route where the transport has one
 * (RabbitMQ: the subscription's exchange), and every other consumer passes over it without applying
 * it. {@link ReplayRoute#BROADCAST} (named, never the default) writes it for every consumer of the
 * topic instead; it is logged as a warning and audited with the reason {@code broadcast}. Corrected
 * copies ({@link #editAsCopy}) are always targeted.
 *
 * <pre>{@code
 * Replayer replayer = Replayer.builder(dataSource, deadLetters, kafkaDecoder)
 *     .by("alice")
 *     .ratePerSecond(50)
 *     .build();
 * ReplayResult result = replayer.replayKey("billing", "order-42");
 * replayer.discard(17, "order was cancelled by hand");
 * }</pre>
 *
 * <p><b>Decoding.</b> A dead letter keeps the record's bytes; the decoder turns them back into the
 * {@link Message} (for Kafka records in CloudEvents binary mode, the Kafka module provides it). A
 * letter whose decoder throws, returns null, or returns a message with a different id than the
 * letter's is counted failed and stays {@code PENDING}.
 *
 * <p><b>One transaction per letter.</b> Each letter is replayed in its own transaction on a
 * connection of the data source: it locks the letter's row, checks it is still {@code PENDING} and
 * under the maximum replays, writes the message to the outbox, marks the letter {@code REPLAYED}
 * (counting the replay) and writes an audit row to {@code postbox_replay_audit}, then commits; so
 * concurrent replays of one letter write it once, and replaying a letter again writes nothing. The
 * dead-letter tables must be in the data source's database and current schema (the store passed in
 * is only used to find letters; its rows are changed through the data source). If the outbox still
 * holds a published or relay-failed row with the message's id (a message replayed before, or
 * produced by this database), that row is deleted in the same transaction so the id can be written
 * again; a pending row makes the write fail (the message is still on its way).
 *
 * <p><b>Loops.</b> A letter already replayed {@linkplain Builder#maxReplays(int) maxReplays} times
 * (the count carries over to new letters of the same message, see {@link PostgresDeadLetterStore})
 * is skipped and reported, so a message that keeps failing cannot loop.
 *
 * <p><b>Rate.</b> Writes are spaced at least {@code 1 / ratePerSecond} apart across all calls of
 * one replayer, waiting with the injected {@link Sleeper} and measuring with the injected {@link
 * Clock}. Skipped letters and letters the decoder rejects take no turn.
 *
 * <p><b>Operator actions.</b> Besides replays and discards, a replayer writes a corrected copy of a
 * letter's message ({@link #editAsCopy}), releases or skips a parked key ({@link #releaseParked},
 * {@link #skipParked}) and retries or skips an outbox row that holds its key ({@link
 * #retryBlocked}, {@link #skipBlocked}); each action and its {@code postbox_replay_audit} row (with
 * the letter, message, copy, consumer, key or outbox position it concerned) commit in one
 * transaction. {@link #as(String)} gives the replayer of another operator that shares this one's
 * rate.
 *
 * <p>Defaults: {@value #DEFAULT_RATE_PER_SECOND} writes per second, at most {@value
 * #DEFAULT_MAX_REPLAYS} replays per message, the system UTC clock and {@link Sleeper#SYSTEM};
 * {@link Builder#by(String)} (who replays, for the audit) is required. Thread-safe.
 */
public final class Replayer {

  /** Writes per second by default. */
  public static final double DEFAULT_RATE_PER_SECOND = 100;

  /** How many times a message is replayed at most, by default. */
  public static final int DEFAULT_MAX_REPLAYS = 3;

  private final DataSource dataSource;
  private final DeadLetterStore store;
  private final Function<DeadLetter, Message> decoder;
  private final Pacer pacer;
  private final int maxReplays;
  private final String by;
  private final io.opentelemetry.api.OpenTelemetry openTelemetry;
  private final LetterActions letters;

  private Replayer(Builder b) {
    this.dataSource = b.dataSource;
    this.store = b.store;
    this.decoder = b.decoder;
    this.pacer =
        new Pacer(
            Duration.ofNanos(Math.max(1, Math.round(1e9 / b.ratePerSecond))), b.clock, b.sleeper);
    this.maxReplays = b.maxReplays;
    this.by = b.by.orElseThrow();
    this.openTelemetry = b.openTelemetry;
    this.letters = new LetterActions(dataSource, decoder, maxReplays, by, openTelemetry);
  }

  private Replayer(Replayer shared, String by) {
    this.dataSource = shared.dataSource;
    this.store = shared.store;
    this.decoder = shared.decoder;
    this.pacer = shared.pacer;
    this.maxReplays = shared.maxReplays;
    this.by = by;
    this.openTelemetry = shared.openTelemetry;
    this.letters = new LetterActions(dataSource, decoder, maxReplays, by, openTelemetry);
  }

  /**
   * The same replayer acting for {@code who} (recorded on the letters and in the audit): it shares
   * this replayer's rate, so every operator's writes together stay under it.
   *
   * @throws IllegalArgumentException if who is blank
   */
  public Replayer as(String who) {
    Objects.requireNonNull(who, "who");
    if (who.isBlank()) {
      throw new IllegalArgumentException("who must not be blank");
    }
    return new Replayer(this, who);
  }

  /** Who this replayer acts for. */
  public String by() {
    return by;
  }

  /**
   * A builder replaying letters of {@code store} into the outbox of {@code dataSource}, decoding
   * their messages with {@code decoder}.
   */
  public static Builder builder(
      DataSource dataSource, DeadLetterStore store, Function<DeadLetter, Message> decoder) {
    return new Builder(dataSource, store, decoder);
  }

  /**
   * Replays dead letter {@code id} if it is {@code PENDING}, to its consumer only ({@link
   * ReplayRoute#TARGETED}).
   *
   * @throws NoSuchElementException if there is no such letter
   * @throws ReplayInterruptedException if interrupted while waiting for its turn
   */
  public ReplayResult replay(long id) {
    return replay(id, ReplayRoute.TARGETED);
  }

  /**
   * Replays dead letter {@code id} if it is {@code PENDING}, to the consumers {@code route} names.
   *
   * @throws NoSuchElementException if there is no such letter
   * @throws ReplayInterruptedException if interrupted while waiting for its turn
   */
  public ReplayResult replay(long id, ReplayRoute route) {
    Objects.requireNonNull(route, "route");
    DeadLetter letter =
        store.find(id).orElseThrow(() -> new NoSuchElementException("no dead letter " + id));
    Progress p = new Progress();
    p.add(replayOne(letter, "dead letter " + id, route, p), id);
    return p.result();
  }

  /**
   * Replays the {@code PENDING} letters among those {@code query} returns, oldest first, paced by
   * the rate, each to its consumer only; letters of other statuses are skipped.
   *
   * @throws IllegalArgumentException if the query's limit is not between 1 and {@value
   *     PostgresDeadLetterStore#MAX_LIMIT}
   * @throws ReplayInterruptedException if interrupted while waiting between writes
   */
  public ReplayResult replayQuery(Query query) {
    return replayQuery(query, ReplayRoute.TARGETED);
  }

  /**
   * As {@link #replayQuery(Query)}, to the consumers {@code route} names.
   *
   * @throws IllegalArgumentException if the query's limit is not between 1 and {@value
   *     PostgresDeadLetterStore#MAX_LIMIT}
   * @throws ReplayInterruptedException if interrupted while waiting between writes
   */
  public ReplayResult replayQuery(Query query, ReplayRoute route) {
    Objects.requireNonNull(route, "route");
    List<DeadLetter> letters = store.query(query);
    String what = "query " + PostgresDeadLetterStoreImpl.describe(query);
    Progress p = new Progress();
    for (DeadLetter letter : letters) {
      p.add(replayOne(letter, "dead letter " + letter.id() + " of " + what, route, p), letter.id());
    }
    return p.result();
  }

  /**
   * Replays the {@code PENDING} letters of one key of a consumer (at most {@value
   * PostgresDeadLetterStore#MAX_LIMIT}), oldest first, in order, paced by the rate, to that
   * consumer only. To keep the key's order, it stops at the first letter that fails: the later ones
   * are reported skipped and stay {@code PENDING}.
   *
   * @param key the record key as UTF-8 text
   * @throws ReplayInterruptedException if interrupted while waiting between writes
   */
  public ReplayResult replayKey(String consumer, String key) {
    return replayKey(consumer, key, ReplayRoute.TARGETED);
  }

  /**
   * As {@link #replayKey(String, String)}, to the consumers {@code route} names.
   *
   * @param key the record key as UTF-8 text
   * @throws ReplayInterruptedException if interrupted while waiting between writes
   */
  public ReplayResult replayKey(String consumer, String key, ReplayRoute route) {
    Objects.requireNonNull(route, "route");
    Objects.requireNonNull(consumer, "consumer");
    Objects.requireNonNull(key, "key");
    List<DeadLetter> letters =
        store.query(
            new Query(
                Optional.of(consumer),
                Optional.empty(),
                Optional.of(key),
                Optional.empty(),
                Optional.of(Status.PENDING),
                Optional.empty(),
                Optional.empty(),
                PostgresDeadLetterStore.MAX_LIMIT));
    String what = "key '" + key + "' of consumer '" + consumer + "'";
    Progress p = new Progress();
    boolean stopped = false;
    for (DeadLetter letter : letters) {
      if (stopped) {
        p.skipped.add(letter.id());
        continue;
      }
      Outcome o = replayOne(letter, "dead letter " + letter.id() + " of " + what, route, p);
      p.add(o, letter.id());
      stopped = o == Outcome.FAILED;
    }
    return p.result();
  }

  /**
   * Discards dead letter {@code id} with {@code reason}, and audits it, in one transaction.
   *
   * @throws NoSuchElementException if there is no such letter
   * @throws IllegalStateException if it is not {@code PENDING}
   * @throws OutboxException if the database fails
   */
  public void discard(long id, String reason) {
    Objects.requireNonNull(reason, "reason");
    if (reason.isBlank()) {
      throw new IllegalArgumentException("reason must not be blank");
    }
    letters.discard(
        store.find(id).orElseThrow(() -> new NoSuchElementException("no dead letter " + id)),
        reason);
  }

  /**
   * Writes a corrected copy of dead letter {@code id}'s message to the outbox: a new message id,
   * the same topic, key, type and envelope, {@code payload} as its body (the original content type
   * unless {@code contentType} is given), the original id as its causation id and in the header
   * {@value #COPY_OF_HEADER}, and the replay headers of a targeted replay (only the letter's
   * consumer applies it). The letter becomes {@code DISCARDED} with the reason "replaced by
   * corrected copy ...", and an {@code EDIT} audit row names both ids; all in one transaction,
   * paced by the rate like a replay. The original message is never written again.
   *
   * @return the copy's message id
   * @throws NoSuchElementException if there is no such letter
   * @throws IllegalStateException if it is not {@code PENDING}, or its message cannot be decoded
   * @throws ReplayInterruptedException if interrupted while waiting for its turn
   */
  public UUID editAsCopy(long id, byte[] payload, Optional<String> contentType, String reason) {
    Objects.requireNonNull(payload, "payload");
    Objects.requireNonNull(contentType, "contentType");
    requireReason(reason);
    DeadLetter letter =
        store.find(id).orElseThrow(() -> new NoSuchElementException("no dead letter " + id));
    Message copy = letters.correctedCopy(letter, payload, contentType);
    awaitTurn(new Progress());
    return letters.replaceByCopy(letter, copy, reason);
  }

  /**
   * Makes the head of a parked key due now, so its consumer retries the key's sequence at its next
   * drain (a key blocked behind a dead letter goes on); audited as {@code RELEASE_PARKED}.
   *
   * @return how many messages the key holds
   * @throws NoSuchElementException if the key is not parked
   * @throws IllegalStateException if a consumer is retrying it at this moment
   */
  public int releaseParked(String consumer, String key) {
    return heldKeys().releaseParked(consumer, key);
  }

  /**
   * Skips the head of a parked key: it is moved, byte-identical, to the dead letters as {@code
   * DISCARDED} with {@code reason} (so it is never applied, and never lost), and the key's next
   * message is due now; audited as {@code SKIP_PARKED}.
   *
   * @return the id of the dead letter the head became
   * @throws NoSuchElementException if the key is not parked
   * @throws IllegalStateException if a consumer is retrying it at this moment
   */
  public long skipParked(String consumer, String key, String reason) {
    return heldKeys().skipParked(consumer, key, reason);
  }

  /**
   * Retries the outbox row at {@code position} that holds its key or topic ({@link
   * OutboxOperations#retry}), audited as {@code RETRY_BLOCKED} in the same transaction.
   *
   * @return false when no row at {@code position} holds
   */
  public boolean retryBlocked(long position) {
    return heldKeys().resolveBlocked(true, position, null);
  }

  /**
   * Skips the outbox row at {@code position} that holds its key or topic ({@link
   * OutboxOperations#skip}), audited as {@code SKIP_BLOCKED} in the same transaction.
   *
   * @return false when no row at {@code position} holds
   */
  public boolean skipBlocked(long position, String reason) {
    requireReason(reason);
    return heldKeys().resolveBlocked(false, position, reason);
  }

  private HeldKeyActions heldKeys() {
    return new HeldKeyActions(dataSource, by);
  }

  /** The header naming the message a corrected copy was made from. */
  public static final String COPY_OF_HEADER = "postbox-copy-of";

  private static void requireReason(String reason) {
    HeldKeyActions.requireReason(reason);
  }

  private Outcome replayOne(DeadLetter letter, String what, ReplayRoute route, Progress p) {
    return letters.replay(letter, what, route, () -> awaitTurn(p));
  }

  /** Waits for this write's turn under the rate shared by every replayer of this one. */
  private void awaitTurn(Progress p) {
    try {
      pacer.awaitTurn();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ReplayInterruptedException(p.result(), e);
    }
  }

  /** Ids by outcome, in processing order. Confined to one call. */
  private static final class Progress {
    final List<Long> replayed = new ArrayList<>();
    final List<Long> skipped = new ArrayList<>();
    final List<Long> failed = new ArrayList<>();

    void add(Outcome o, long id) {
      switch (o) {
        case REPLAYED -> replayed.add(id);
        case SKIPPED -> skipped.add(id);
        case FAILED -> failed.add(id);
      }
    }

    ReplayResult result() {
      return new ReplayResult(replayed, skipped, failed);
    }
  }

  /** Builds a {@link Replayer}. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private final DeadLetterStore store;
    private final Function<DeadLetter, Message> decoder;
    private double ratePerSecond = DEFAULT_RATE_PER_SECOND;
    private Clock clock = Clock.systemUTC();
    private Sleeper sleeper = Sleeper.SYSTEM;
    private int maxReplays = DEFAULT_MAX_REPLAYS;
    private Optional<String> by = Optional.empty();
    private io.opentelemetry.api.OpenTelemetry openTelemetry;

    private Builder(
        DataSource dataSource, DeadLetterStore store, Function<DeadLetter, Message> decoder) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      this.store = Objects.requireNonNull(store, "store");
      this.decoder = Objects.requireNonNull(decoder, "decoder");
    }

    /**
     * How many messages per second to write at most (default {@value
     * Replayer#DEFAULT_RATE_PER_SECOND}; positive and finite).
     */
    public Builder ratePerSecond(double ratePerSecond) {
      this.ratePerSecond = ratePerSecond;
      return this;
    }

    /** The clock the rate is measured with (default the system UTC clock). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** How the replayer waits between writes (default {@link Sleeper#SYSTEM}). */
    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    /**
     * How many times one message may be replayed (default {@value Replayer#DEFAULT_MAX_REPLAYS}; at
     * least 1); a letter replayed that often is skipped.
     */
    public Builder maxReplays(int maxReplays) {
      this.maxReplays = maxReplays;
      return this;
    }

    /**
     * Sets the OpenTelemetry that makes the replay spans (default: {@code
     * GlobalOpenTelemetry.get()}, a no-op until an SDK is installed).
     */
    public Builder openTelemetry(io.opentelemetry.api.OpenTelemetry openTelemetry) {
      this.openTelemetry = Objects.requireNonNull(openTelemetry, "openTelemetry");
      return this;
    }

    /** Who replays or discards, recorded on the letters and in the audit (required). */
    public Builder by(String who) {
      this.by = Optional.of(Objects.requireNonNull(who, "who"));
      return this;
    }

    /**
     * Builds the replayer.
     *
     * @throws IllegalStateException if {@link #by(String)} was not called
     * @throws IllegalArgumentException if who is blank, the rate is not positive and finite, or
     *     maxReplays is less than 1
     */
    public Replayer build() {
      String who =
          by.orElseThrow(() ->
              new IllegalStateException(
                  "say who replays with by(who): replays and discards are audited"));
      if (who.isBlank()) {
        throw new IllegalArgumentException("who must not be blank");
      }
      if (!(ratePerSecond > 0) || Double.isInfinite(ratePerSecond)) {
        throw new IllegalArgumentException(
            "ratePerSecond must be positive and finite: " + ratePerSecond);
      }
      if (maxReplays < 1) {
        throw new IllegalArgumentException("maxReplays must be at least 1: " + maxReplays);
      }
      return new Replayer(this);
    }
  }
}
