package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.reply.Reply;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.kafka.KafkaRequester;
import dev.postbox.kafka.KafkaResponder;
import dev.postbox.kafka.KafkaSubscriber;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * {@code bench --only rr}: request/reply round trips on Kafka at a fixed offered rate ({@value
 * #RATE} requests/s, open loop: a request is sent on schedule whether or not earlier ones were
 * answered), from {@code request()} to the reply's future, through a {@link KafkaRequester} and a
 * {@link KafkaResponder} on an {@code EFFECTIVELY_ONCE} subscription (each request an inbox row and
 * its stored reply in one transaction). Beside it the broker's raw round trip: a bare client echo
 * (a producer sends, a consumer on the request topic produces the same bytes to the reply topic, a
 * consumer assigned that partition matches them) with the same client settings ({@code acks=all},
 * idempotence, {@code linger.ms=0}, {@code fetch.max.wait.ms=10}). All in this JVM.
 */
public final class RrBench {

  /** Offered requests per second. */
  static final int RATE = 1_000;

  private final BenchEnv env;
  private final BenchConfig config;

  public RrBench(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /** A rate the responder keeps up with on a loaded 2-core machine, for comparison. */
  static final int LOW_RATE = 100;

  private int requests(int rate) {
    return config.quick() ? 3 * rate : 15 * rate;
  }

  /** At {@value #RATE} requests/s, then at {@value #LOW_RATE} (names with {@code _at_100}). */
  public List<Measurement> run() throws Exception {
    List<Measurement> all = new ArrayList<>(measure(RATE, ""));
    all.addAll(measure(LOW_RATE, "_at_" + LOW_RATE));
    return all;
  }

  /** The raw echo's p50/p99, then request/reply's, and their ratios, at {@code rate}. */
  private List<Measurement> measure(int rate, String suffix) throws Exception {
    double[] raw = rawEcho(rate);
    double[] rr = requestReply(rate);
    String note = "open loop at " + rate + " requests/s, " + requests(rate) + " requests";
    Measurement rawP50 =
        Measurement.of("rr_kafka_raw_echo_p50_ms" + suffix, raw[0], "ms").note(note);
    Measurement rawP99 =
        Measurement.of("rr_kafka_raw_echo_p99_ms" + suffix, raw[1], "ms").note(note);
    Measurement p50 =
        Measurement.of("rr_kafka_p50_ms" + suffix, rr[0], "ms")
            .note(
                note
                    + "; sent at "
                    + Math.round(rr[2])
                    + " requests/s, answered at "
                    + Math.round(rr[4])
                    + "/s (send start to last reply), "
                    + Math.round(rr[3])
                    + " timed out (5 min)");
    Measurement p99 = Measurement.of("rr_kafka_p99_ms" + suffix, rr[1], "ms").note(p50.note());
    return List.of(
        rawP50,
        rawP99,
        p50,
        p99,
        Measurement.of("rr_kafka_p50_vs_raw_echo" + suffix, rr[0] / Math.max(raw[0], 1e-3), "x")
            .note(p50.name() + " / " + rawP50.name()),
        Measurement.of("rr_kafka_p99_vs_raw_echo" + suffix, rr[1] / Math.max(raw[1], 1e-3), "x")
            .note(p99.name() + " / " + rawP99.name()),
        Measurement.of("rr_kafka_answered_per_s" + suffix, rr[4], "requests/s").note(p50.note()));
  }

  /** {p50, p99, send rate, timeouts, answered per s} of Postbox request/reply. */
  private double[] requestReply(int rate) throws Exception {
    Db db = env.database("rr", 12);
    PostboxMigrations.migrate(db.dataSource());
    String requests = env.topic("rr-requests", ConsumerBench.PARTITIONS);
    String replies = env.topic("rr-replies", 1);
    Subscription sub =
        Subscription.builder("rr-" + UUID.randomUUID())
            .topics(requests)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .concurrency(8)
            .build();
    Payload answer = Payload.json("{\"authorised\":true}");
    try (KafkaResponder responder = KafkaResponder.builder(env.bootstrap()).build();
        KafkaSubscriber server =
            KafkaSubscriber.builder(env.bootstrap(), sub)
                .inbox(PostgresInboxStore.create(db.dataSource()))
                .handler(responder.handler(sub, d -> answer))
                .build()) {
      server.start();
      try (KafkaRequester requester =
          KafkaRequester.builder(env.bootstrap(), replies)
              .maxInFlight(20_000)
              .rememberedRequests(0)
              .build()
              .start()) {
        // warm-up: the subscriber's assignment and JIT, left out of the figures
        for (int i = 0; i < 200; i++) {
          requester.requestAndWait(request(requests, i), Duration.ofMinutes(2));
        }
        ConcurrentLinkedQueue<Double> lat = new ConcurrentLinkedQueue<>();
        List<CompletableFuture<Reply>> all = new ArrayList<>();
        long t0 = System.nanoTime();
        long period = TimeUnit.SECONDS.toNanos(1) / rate;
        for (int i = 0; i < requests(rate); i++) {
          pace(t0 + i * period);
          long start = System.nanoTime();
          all.add(
              requester
                  .request(request(requests, i), Duration.ofMinutes(5))
                  .whenComplete((r, e) -> {
                    if (r != null) {
                      lat.add((System.nanoTime() - start) / 1e6);
                    }
                  }));
        }
        double achieved = Rate.since(t0, requests(rate));
        // a request that got no reply within its timeout is counted, not measured
        CompletableFuture.allOf(
                all.stream().map(f -> f.handle((r, e) -> null)).toArray(CompletableFuture[]::new))
            .get(10, TimeUnit.MINUTES);
        double answeredPerS = Rate.since(t0, lat.size());
        double[] sorted = lat.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return new double[] {
          percentile(sorted, 50),
          percentile(sorted, 99),
          achieved,
          requester.stats().timedOut(),
          answeredPerS
        };
      }
    }
  }

  private static Message request(String topic, int i) {
    return Message.builder(topic, "charge.authorise")
        .key("k" + (i % BenchEnv.KEYS))
        .jsonPayload(BenchEnv.payload(i))
        .build();
  }

  /** {p50, p99} of the bare client echo. */
  private double[] rawEcho(int rate) throws Exception {
    String requests = env.topic("echo-requests", ConsumerBench.PARTITIONS);
    String replies = env.topic("echo-replies", 1);
    Map<String, Object> producerConfig = new HashMap<>();
    producerConfig.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrap());
    producerConfig.put(ProducerConfig.ACKS_CONFIG, "all");
    producerConfig.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    producerConfig.put(ProducerConfig.LINGER_MS_CONFIG, 0);
    Map<String, Object> consumerConfig = new HashMap<>();
    consumerConfig.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrap());
    consumerConfig.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 10);
    consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    AtomicBoolean running = new AtomicBoolean(true);
    Map<String, Long> sentAt = new ConcurrentHashMap<>();
    ConcurrentLinkedQueue<Double> lat = new ConcurrentLinkedQueue<>();
    try (KafkaProducer<byte[], byte[]> client = producer(producerConfig);
        KafkaProducer<byte[], byte[]> echoProducer = producer(producerConfig);
        KafkaConsumer<byte[], byte[]> echoConsumer = consumer(consumerConfig, "echo");
        KafkaConsumer<byte[], byte[]> replyConsumer = consumer(consumerConfig, null)) {
      List<TopicPartition> parts = new ArrayList<>();
      for (int p = 0; p < ConsumerBench.PARTITIONS; p++) {
        parts.add(new TopicPartition(requests, p));
      }
      echoConsumer.assign(parts);
      TopicPartition replyPart = new TopicPartition(replies, 0);
      replyConsumer.assign(List.of(replyPart));
      replyConsumer.seekToEnd(List.of(replyPart));
      replyConsumer.position(replyPart);
      Thread echo =
          Thread.ofPlatform()
              .start(() -> {
                while (running.get()) {
                  for (ConsumerRecord<byte[], byte[]> r :
                      echoConsumer.poll(Duration.ofMillis(100))) {
                    echoProducer.send(new ProducerRecord<>(replies, 0, r.key(), r.value()));
                  }
                }
              });
      Thread reader =
          Thread.ofPlatform()
              .start(() -> {
                while (running.get()) {
                  for (ConsumerRecord<byte[], byte[]> r :
                      replyConsumer.poll(Duration.ofMillis(100))) {
                    Long s = sentAt.remove(new String(r.key(), StandardCharsets.UTF_8));
                    if (s != null) {
                      lat.add((System.nanoTime() - s) / 1e6);
                    }
                  }
                }
              });
      try {
        int warm = 200;
        int total = warm + requests(rate);
        long t0 = System.nanoTime();
        long period = TimeUnit.SECONDS.toNanos(1) / rate;
        for (int i = 0; i < total; i++) {
          pace(t0 + i * period);
          String id = UUID.randomUUID().toString();
          if (i >= warm) {
            sentAt.put(id, System.nanoTime());
          }
          client.send(
              new ProducerRecord<>(
                  requests,
                  id.getBytes(StandardCharsets.UTF_8),
                  BenchEnv.payload(i).getBytes(StandardCharsets.UTF_8)));
        }
        BenchEnv.awaitCount(
            "echo replies", () -> lat.size(), requests(rate), Duration.ofMinutes(2));
      } finally {
        running.set(false);
        echo.join();
        reader.join();
      }
    }
    double[] sorted = lat.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return new double[] {percentile(sorted, 50), percentile(sorted, 99)};
  }

  private static KafkaProducer<byte[], byte[]> producer(Map<String, Object> config) {
    return new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
  }

  private static KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> config, String group) {
    Map<String, Object> c = new HashMap<>(config);
    if (group != null) {
      c.put(ConsumerConfig.GROUP_ID_CONFIG, group + "-" + UUID.randomUUID());
    }
    return new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  private static void pace(long dueNanos) {
    long wait;
    while ((wait = dueNanos - System.nanoTime()) > 0) {
      LockSupport.parkNanos(wait);
    }
  }

  static double percentile(double[] sorted, double p) {
    if (sorted.length == 0) {
      return 0;
    }
    int i = (int) Math.ceil(p / 100 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }
}
