package dev.postbox.bench.jmh;

import dev.postbox.core.Payload;
import dev.postbox.core.codec.JsonCodec;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * JMH: the JSON codec on a small order event (about 200 bytes encoded). Run with {@code ./postbox
 * bench --jmh}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class CodecBenchmark {

  /** The benchmark's event. */
  public record OrderCreated(String orderId, String customerId, int quantity, String note) {}

  private JsonCodec codec;
  private OrderCreated event;
  private Payload encoded;

  /** Builds the codec and one encoded event. */
  @Setup
  public void setUp() {
    codec = JsonCodec.create();
    event = new OrderCreated("o-123456", "key-42", 3, "x".repeat(120));
    encoded = codec.encode(event);
  }

  /** Encodes the event. */
  @Benchmark
  public Payload encode() {
    return codec.encode(event);
  }

  /** Decodes the event. */
  @Benchmark
  public OrderCreated decode() {
    return codec.decode(encoded, OrderCreated.class);
  }
}
