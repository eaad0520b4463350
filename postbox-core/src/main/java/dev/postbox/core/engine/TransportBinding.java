package dev.postbox.core.engine;

import java.util.Objects;
import java.util.function.Predicate;

/**
 * What a transport adapter tells the consumer engine about its messaging system: its name, the span
 * attribute that carries a record's position, and which of its errors are retriable. The rest of
 * the contract is the calls the adapter makes, described here once:
 *
 * <ul>
 *   <li><b>Records in.</b> The adapter reads records on its own thread (which never runs handlers)
 *       and wraps each as a {@link DeliveryProcessor.Incoming}: its position ({@code offset}, or a
 *       delivery tag / sequence number), its partition or queue identity ({@code topic}, {@code
 *       partition}), the raw key, value and headers (kept byte-identical for the dead letters) and
 *       a decoder. It counts what it read with {@link DeliveryProcessor#received(int)}.
 *   <li><b>Scheduling.</b> Work goes through {@link KeyedExecutor}, one lane per message key (or
 *       per partition for {@code PARTITION} ordering and batches), and a worker calls {@link
 *       DeliveryProcessor#process} (or {@link DeliveryProcessor#processBatch}) with an {@code
 *       owned} supplier that turns false once the record's partition or queue is no longer this
 *       consumer's.
 *   <li><b>Completion out.</b> {@code process} answers {@code true} (finished: applied, suppressed,
 *       ignored, parked, handed off or dead-lettered) or {@code false} (abandoned: the transport
 *       must deliver it again). An ordered-log transport keeps one {@link OffsetTracker} per
 *       partition ({@code dispatched}, {@code tryStart}, {@code ended}) and commits only its {@link
 *       OffsetTracker#committable()} contiguous prefix; a queue transport acks one delivery when it
 *       finished and rejects/requeues it when it was abandoned. A record dropped unstarted is
 *       counted with {@link DeliveryProcessor#abandoned(int)}.
 *   <li><b>Back-pressure.</b> The adapter pauses reading (Kafka: pause the partitions; a queue:
 *       stop or lower the prefetch) while too many records are unfinished, and resumes when they
 *       drain; the engine never blocks the reading thread.
 *   <li><b>Revocation.</b> When the transport takes a partition or queue away, the adapter calls
 *       {@link OffsetTracker#revokeAndAwait} (records not started will not start; running ones get
 *       until the deadline), commits or acks what finished, and lets {@code owned} turn false for
 *       the rest, which the engine then abandons instead of finishing.
 *   <li><b>Delayed retries and parking.</b> Optional: {@link DeliveryProcessor.RetriesExhausted}
 *       (for example retry topics) and {@link DeliveryProcessor.Parking} (how a parked record
 *       becomes an {@code Incoming} again); the adapter runs {@link DeliveryProcessor#drainParked}
 *       on a thread of its own.
 * </ul>
 *
 * <p>Immutable and thread-safe. Kafka's binding names {@code "kafka"}, {@code
 * messaging.kafka.offset} and matches Kafka's {@code RetriableException}.
 *
 * @param messagingSystem the OpenTelemetry {@code messaging.system} of the spans (for example the
 *     adapter's broker name)
 * @param positionAttribute the span attribute that carries {@link
 *     DeliveryProcessor.Incoming#offset()}
 * @param retriable which of the transport's own errors are transient; tested against each throwable
 *     of a failure's cause chain, after the permanent rules (see {@code
 *     dev.postbox.core.consumer.FailureHandler#withTransientErrors})
 */
public record TransportBinding(
    String messagingSystem, String positionAttribute, Predicate<Throwable> retriable) {

  /** Checks that every part is given. */
  public TransportBinding {
    Objects.requireNonNull(messagingSystem, "messagingSystem");
    Objects.requireNonNull(positionAttribute, "positionAttribute");
    Objects.requireNonNull(retriable, "retriable");
    if (messagingSystem.isBlank()) {
      throw new IllegalArgumentException("messagingSystem must not be blank");
    }
  }
}
