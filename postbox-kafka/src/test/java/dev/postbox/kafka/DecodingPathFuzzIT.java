package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.kafka.DecodingPathFuzzTest.Engine;
import dev.postbox.kafka.DecodingPathFuzzTest.Mutation;
import dev.postbox.kafka.internal.IncomingRecords;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.Shrinkable;
import net.jqwik.api.sessions.JqwikSession;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The fuzz test's engine ({@link DecodingPathFuzzTest}) with the real PostgreSQL dead-letter store:
 * 400 fuzzed records (NUL, invalid UTF-8 and lone surrogates among the header names, values, keys
 * and payloads) each finish (never retried forever), and every dead letter reads back exactly as it
 * was given: key, value, headers (names and bytes), type, error message and fingerprint. The seed
 * is printed and fixed per run by the build's seed property ({@code -Dfuzz.seed}), so a failure can
 * be replayed.
 */
@PostboxTest
class DecodingPathFuzzIT {

  @Test
  @Timeout(value = 10, unit = TimeUnit.MINUTES) // a safety net: a store write retried forever hangs
  void everyFuzzedDeadLetterIsStoredAndReadBackExactly(PostboxTestContext ctx) {
    PostboxMigrations.migrate(ctx.dataSource());
    DeadLetterStore store = PostgresDeadLetterStore.create(ctx.dataSource());
    Engine engine = new Engine(Optional.of(store));
    long seed = Long.getLong("fuzz.seed", System.nanoTime());
    System.out.println("DecodingPathFuzzIT seed " + seed + " (-Dfuzz.seed=" + seed + ")");
    Random random = new Random(seed);
    JqwikSession.start();
    try {
      var generator = DecodingPathFuzzTest.mutationLists().generator(1000);
      for (int i = 0; i < 400; i++) {
        Shrinkable<List<Mutation>> mutations = generator.next(random);
        ConsumerRecord<byte[], byte[]> r =
            DecodingPathFuzzTest.mutate(mutations.value(), engine.offsets.incrementAndGet());
        assertThat(engine.processor.process(IncomingRecords.of(r), () -> true))
            .as("finished: %s", mutations.value())
            .isTrue();
      }
    } finally {
      JqwikSession.finish();
    }
    assertThat(engine.letters).as("some fuzzed records were dead-lettered").isNotEmpty();
    Map<Long, NewDeadLetter> given = new HashMap<>();
    for (NewDeadLetter l : engine.letters) {
      given.put(l.offset(), l);
    }
    List<DeadLetter> stored = store.query(DeadLetterStore.Query.all(1000));
    assertThat(stored).hasSameSizeAs(engine.letters);
    for (DeadLetter dl : stored) {
      NewDeadLetter in = given.get(dl.letter().offset());
      NewDeadLetter out = dl.letter();
      assertThat(out.key()).isEqualTo(in.key());
      assertThat(out.value()).isEqualTo(in.value());
      assertThat(out.headers()).isEqualTo(in.headers());
      assertThat(out.type()).isEqualTo(in.type());
      assertThat(out.errorMessage()).isEqualTo(in.errorMessage());
      assertThat(out.fingerprint()).isEqualTo(in.fingerprint());
      assertThat(out.classification()).isEqualTo(in.classification());
    }
  }
}
