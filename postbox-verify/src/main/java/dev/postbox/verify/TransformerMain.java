package dev.postbox.verify;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.kafka.KafkaTransformer;

/**
 * A consume-transform-produce instance of the {@code transform} scenario, as its own OS process
 * ({@link TransformScenario}): reads the input topic, emits {@value #OUTPUTS} outputs per input
 * (same key; headers {@code input} = the input's id, {@code seq}, {@code idx}) in one Kafka
 * transaction with the input offsets; an input with the header {@code poison} throws a {@link
 * PermanentMessageException} and goes to the dead letters in PostgreSQL. Its {@code
 * transactional.id} is its name, kept across incarnations (a restart fences its predecessor).
 *
 * <p>Arguments: bootstrap servers, input topic, output topic, group, transactional id, JDBC URL.
 */
public final class TransformerMain {

  /** Outputs per input. */
  static final int OUTPUTS = 2;

  private TransformerMain() {}

  public static void main(String[] args) throws Exception {
    String out = args[2];
    HikariDataSource ds = ChildSupport.dataSource(args[5], args[4], 2, "");
    Subscription sub =
        Subscription.builder(args[3])
            .topics(args[1])
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .ordering(Ordering.KEY)
            .concurrency(4)
            .build();
    KafkaTransformer t =
        KafkaTransformer.builder(args[0], sub)
            .transactionalId(args[4])
            .maxBatch(100)
            .deadLetters(PostgresDeadLetterStore.create(ds))
            .consumerProperty("session.timeout.ms", Campaign.SESSION_MS)
            .consumerProperty("heartbeat.interval.ms", Campaign.SESSION_MS / 4)
            .consumerProperty("max.poll.interval.ms", 20_000)
            .consumerProperty("client.id", args[4])
            .transform((input, emit) -> {
              if (input.header("poison").isPresent()) {
                throw new PermanentMessageException("poison input " + input.id());
              }
              for (int i = 0; i < OUTPUTS; i++) {
                emit.emit(
                    Message.builder(out, "verify.transformed")
                        .key(input.key().orElseThrow())
                        .header("input", input.id().toString())
                        .header("seq", input.header("seq").orElseThrow())
                        .header("idx", Integer.toString(i))
                        .jsonPayload("{}")
                        .build());
              }
            })
            .build();
    t.start();
    System.out.println("transformer " + args[4] + " started");
    ChildSupport.runUntilTerminated(() -> {
      t.close();
      ds.close();
    });
  }
}
