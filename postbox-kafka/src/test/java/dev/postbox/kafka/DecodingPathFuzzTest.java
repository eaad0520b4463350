package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.DecodingException;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.PostboxException;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.kafka.BadInputCorpus.Item;
import dev.postbox.kafka.internal.IncomingRecords;
import io.opentelemetry.api.OpenTelemetry;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;

/**
 * Fuzzes the whole decoding and mapping path of a consumed record: valid records mutated at random
 * (headers dropped, duplicated, replaced by random bytes or tricky text, keys and values replaced,
 * timestamps removed) go through {@link KafkaRecords#fromRecord} and then through the consumer
 * engine ({@link DeliveryProcessor}, with the corpus's event types, upcaster and tenant rule).
 * Properties: the mapping returns a message or throws a {@link DecodingException}, never anything
 * else; and the engine finishes every record as exactly one of applied, ignored (counted), or
 * dead-lettered with a classification and a {@link PostboxException} error class, with no exception
 * escaping it.
 */
class DecodingPathFuzzTest {

  /** One change to a record. */
  sealed interface Mutation {}

  record Drop(int header) implements Mutation {}

  record Duplicate(int header) implements Mutation {}

  record Replace(int header, byte[] value) implements Mutation {}

  record AddHeader(String name, byte[] value) implements Mutation {}

  record NewKey(byte[] key) implements Mutation {}

  record NewValue(byte[] value) implements Mutation {}

  record NoTimestamp() implements Mutation {}

  static ConsumerRecord<byte[], byte[]> mutate(List<Mutation> mutations, long offset) {
    BadInputCorpus.Rec base = BadInputCorpus.Rec.valid("k");
    List<Header> headers = new ArrayList<>(base.headers);
    byte[] key = base.key;
    byte[] value = base.value;
    long timestamp = 1_714_558_530_000L;
    for (Mutation m : mutations) {
      switch (m) {
        case Drop d -> {
          if (!headers.isEmpty()) {
            headers.remove(d.header() % headers.size());
          }
        }
        case Duplicate d -> {
          if (!headers.isEmpty()) {
            headers.add(headers.get(d.header() % headers.size()));
          }
        }
        case Replace r -> {
          if (!headers.isEmpty()) {
            int i = r.header() % headers.size();
            headers.set(i, new RecordHeader(headers.get(i).key(), r.value()));
          }
        }
        case AddHeader a -> headers.add(new RecordHeader(a.name(), a.value()));
        case NewKey k -> key = k.key();
        case NewValue v -> value = v.value();
        case NoTimestamp n -> timestamp = -1;
      }
    }
    return new ConsumerRecord<>(
        "fuzz",
        0,
        offset,
        timestamp,
        timestamp < 0 ? TimestampType.NO_TIMESTAMP_TYPE : TimestampType.CREATE_TIME,
        -1,
        -1,
        key,
        value,
        new RecordHeaders(headers),
        Optional.empty());
  }

  @Property(tries = 2_000)
  void theMappingReturnsAMessageOrADecodingException(
      @ForAll("mutations") List<Mutation> mutations) {
    ConsumerRecord<byte[], byte[]> r = mutate(mutations, 1);
    Message m;
    try {
      m = KafkaRecords.fromRecord(r);
    } catch (DecodingException e) {
      assertThat(e.getMessage()).isNotBlank();
      return;
    }
    // what was read is written back and read again to the same message
    ConsumerRecord<byte[], byte[]> again = TestRecords.consumed(KafkaRecords.toRecord(m));
    Message back = KafkaRecords.fromRecord(again);
    assertThat(back).isEqualTo(m);
  }

  @Property(tries = 500)
  void theEngineFinishesEveryRecordAsAppliedIgnoredOrClassifiedDeadLetter(
      @ForAll("mutations") List<Mutation> mutations) {
    Engine engine = ENGINE;
    ConsumerStats before = engine.processor.stats();
    int lettersBefore = engine.letters.size();
    long appliedBefore = engine.applied.get();
    ConsumerRecord<byte[], byte[]> r = mutate(mutations, engine.offsets.incrementAndGet());
    boolean finished = engine.processor.process(IncomingRecords.of(r), () -> true);
    assertThat(finished).as("finished, not abandoned").isTrue();
    ConsumerStats after = engine.processor.stats();
    long applied = engine.applied.get() - appliedBefore;
    long ignored = after.unknownTypes() - before.unknownTypes();
    int letters = engine.letters.size() - lettersBefore;
    assertThat(applied + ignored + letters).as("exactly one end state").isEqualTo(1);
    assertThat(after.retries()).as("nothing here is transient").isEqualTo(before.retries());
    if (letters == 1) {
      DeadLetterStore.NewDeadLetter l = engine.letters.get(engine.letters.size() - 1);
      assertThat(l.classification()).isNotNull();
      assertThat(PostboxException.class)
          .as(l.errorClass() + ": " + l.errorMessage())
          .isAssignableFrom(classOf(l.errorClass()));
      assertThat(l.value()).isEqualTo(r.value());
    }
  }

  private static Class<?> classOf(String name) {
    try {
      return Class.forName(name);
    } catch (ClassNotFoundException e) {
      throw new AssertionError(name, e);
    }
  }

  /** The engine under test: one processor for all tries (as one subscriber sees many records). */
  private static final Engine ENGINE = new Engine();

  static final class Engine {
    final List<DeadLetterStore.NewDeadLetter> letters = new CopyOnWriteArrayList<>();
    final AtomicLong applied = new AtomicLong();
    final AtomicLong offsets = new AtomicLong();
    final DeliveryProcessor processor;

    /** An engine whose dead letters are kept in {@link #letters} only. */
    Engine() {
      this(Optional.empty());
    }

    /**
     * An engine whose dead letters go to {@code store} too (each is in {@link #letters} once the
     * store took it), as {@link DecodingPathFuzzIT} does with the real PostgreSQL store.
     */
    Engine(Optional<DeadLetterStore> store) {
      Subscription subscription =
          Subscription.builder("fuzz")
              .topics("fuzz")
              .guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
              .eventTypes(BadInputCorpus.eventTypes())
              .allowedTenants(Set.of(BadInputCorpus.TENANT))
              .build();
      processor =
          DeliveryProcessor.builder(KafkaBinding.TRANSPORT, subscription)
              .handler(d -> {
                d.event(Item.class);
                applied.incrementAndGet();
              })
              .deadLetters(Optional.of(new ListDeadLetters(letters, store)))
              .time(Clock.systemUTC(), Ticker.SYSTEM, Sleeper.SYSTEM)
              .metrics(PostboxMetrics.noop())
              .openTelemetry(OpenTelemetry.noop())
              .build();
    }
  }

  /**
   * A dead-letter store that keeps what it is given in a list, after {@code real} (when present)
   * took it (only {@code add} is used here).
   */
  record ListDeadLetters(
      List<DeadLetterStore.NewDeadLetter> letters, Optional<DeadLetterStore> real)
      implements DeadLetterStore {
    @Override
    public long add(NewDeadLetter letter) {
      long id = real.map(r -> r.add(letter)).orElse(0L);
      letters.add(letter);
      return real.isPresent() ? id : letters.size();
    }

    @Override
    public Optional<DeadLetter> find(long id) {
      throw new UnsupportedOperationException();
    }

    @Override
    public List<DeadLetter> query(Query query) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void markReplayed(long id, String by) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void discard(long id, String by, String reason) {
      throw new UnsupportedOperationException();
    }

    @Override
    public int purge(Duration age, int limit) {
      throw new UnsupportedOperationException();
    }
  }

  @Provide
  Arbitrary<List<Mutation>> mutations() {
    return mutationLists();
  }

  /** Up to four mutations of a valid record. */
  static Arbitrary<List<Mutation>> mutationLists() {
    return mutation().list().ofMaxSize(4);
  }

  private static Arbitrary<Mutation> mutation() {
    Arbitrary<Integer> index = Arbitraries.integers().between(0, 20);
    Arbitrary<Mutation> drop = index.map(Drop::new);
    Arbitrary<Mutation> dup = index.map(Duplicate::new);
    Arbitrary<Mutation> replace = Combinators.combine(index, values()).as(Replace::new);
    Arbitrary<Mutation> add =
        Combinators.combine(
                Arbitraries.of(
                    "ce_id",
                    "ce_type",
                    "ce_time",
                    "ce_schemaversion",
                    "ce_tenant",
                    "ce_specversion",
                    "ce_source",
                    "ce_partitionkey",
                    "content-type",
                    "CE_ID",
                    "Content-Type",
                    "pb_retry_attempt",
                    "pb_retry_due",
                    "ce_traceparent",
                    "traceparent",
                    "note",
                    "no\u0000te",
                    "ce_tenant\u0000",
                    "x\uD800y",
                    "\\~n",
                    ""),
                values())
            .as(AddHeader::new);
    Arbitrary<Mutation> key = values().map(NewKey::new);
    Arbitrary<Mutation> value = payloads().map(NewValue::new);
    Arbitrary<Mutation> noTimestamp = Arbitraries.just(new NoTimestamp());
    return Arbitraries.oneOf(drop, dup, replace, add, key, value, noTimestamp);
  }

  private static Arbitrary<byte[]> values() {
    Arbitrary<byte[]> tricky =
        Arbitraries.of(
                "",
                "1.0",
                "0.3",
                "0",
                "1",
                "2",
                "3",
                "4",
                "01",
                "-1",
                "2147483648",
                "acme",
                "evil",
                "ACME",
                "corpus.item",
                "corpus.other",
                "application/json",
                "text/plain",
                "application/cloudevents+json",
                "2024-05-01T10:15:30Z",
                "2024-02-30T00:00:00Z",
                "9999-12-31T23:59:59.999999999Z",
                "+10000-01-01T00:00:00Z",
                "/src",
                "a b<>",
                "00000000-0000-0000-0000-000000000000",
                "not-a-uuid",
                " ",
                "\u0000",
                "ac\u0000me",
                "/a\u0000b",
                "\\~acme",
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                "x".repeat(300))
            .map(s -> s.getBytes(StandardCharsets.UTF_8));
    Arbitrary<byte[]> random = Arbitraries.bytes().array(byte[].class).ofMaxSize(40);
    // invalid UTF-8: a truncated sequence, a NUL after a lead byte, an encoded lone surrogate
    Arbitrary<byte[]> invalidUtf8 =
        Arbitraries.of(
            new byte[] {'a', (byte) 0xC3},
            new byte[] {'a', (byte) 0xC3, 0},
            new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
            new byte[] {(byte) 0xFF, 'x'});
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(6, tricky),
        net.jqwik.api.Tuple.of(2, invalidUtf8),
        net.jqwik.api.Tuple.of(3, random),
        net.jqwik.api.Tuple.of(1, Arbitraries.just(null)));
  }

  private static Arbitrary<byte[]> payloads() {
    return Arbitraries.oneOf(
        Arbitraries.of(
                "{\"sku\":\"a\",\"quantity\":1}",
                "{\"sku\":\"a\",\"qty\":1}",
                "null",
                "[]",
                "{\"sku\":1}",
                "{",
                "",
                "{\"sku\":\"a\",\"quantity\":1}x",
                "{\"sku\":\"a\\u0000\",\"quantity\":1}",
                "{\"sku\":\"\\uD800\",\"quantity\":1}")
            .map(s -> s.getBytes(StandardCharsets.UTF_8)),
        Arbitraries.bytes().array(byte[].class).ofMaxSize(40),
        Arbitraries.just(null));
  }
}
