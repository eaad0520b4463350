package dev.postbox.bench.jmh;

import dev.postbox.bench.internal.BenchEnv;
import dev.postbox.core.Message;
import dev.postbox.kafka.KafkaRecords;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.record.TimestampType;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * JMH: the envelope mapping between {@link Message} and a Kafka record (CloudEvents binary mode),
 * both ways, for a benchmark message with a 200-byte payload. Run with {@code ./postbox bench
 * --jmh}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class EnvelopeMappingBenchmark {

  private Message message;
  private ConsumerRecord<byte[], byte[]> record;

  /** Builds one message and the consumer record it maps to. */
  @Setup
  public void setUp() {
    message = BenchEnv.message("bench.jmh", 42);
    ProducerRecord<byte[], byte[]> p = KafkaRecords.toRecord(message);
    record =
        new ConsumerRecord<>(
            p.topic(),
            0,
            0L,
            0L,
            TimestampType.CREATE_TIME,
            p.key().length,
            p.value().length,
            p.key(),
            p.value(),
            p.headers(),
            java.util.Optional.empty());
  }

  /** Message to producer record. */
  @Benchmark
  public ProducerRecord<byte[], byte[]> toRecord() {
    return KafkaRecords.toRecord(message);
  }

  /** Consumer record to message (validating every header). */
  @Benchmark
  public Message fromRecord() {
    return KafkaRecords.fromRecord(record);
  }
}
