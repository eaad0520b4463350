package dev.postbox.bench.internal;

import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Subscription;
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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
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
 * Request/reply on Kafka for {@link RrBench}: a {@link KafkaRequester} (its own reply partition)
 * and a {@link KafkaResponder} on an {@code EFFECTIVELY_ONCE} {@link KafkaSubscriber} of the
 * request topic ({@value ConsumerBench#PARTITIONS} partitions; each request one inbox transaction
 * that stores the reply, the reply produced after the commit). Beside it the bare client echo: a
 * producer sends, a consumer of the request topic produces the same bytes to the reply topic, a
 * consumer assigned that partition matches them, with the same client settings ({@code acks=all},
 * idempotence, {@code linger.ms=0}, {@code fetch.max.wait.ms=10}) and no database.
 */
final class RrKafka implements RoundTrips {

  private final List<AutoCloseable> open = new ArrayList<>();
  private final int concurrency;
  private final ResponderTimings timings;
  private final String requests;
  private final KafkaRequester requester;
  private final String echoRequests;
  private final String echoReplies;
  private final KafkaProducer<byte[], byte[]> client;
  private final Map<String, CompletableFuture<Void>> echoes = new ConcurrentHashMap<>();
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final List<Thread> threads = new ArrayList<>();

  RrKafka(BenchEnv env, int concurrency) throws Exception {
    this.concurrency = concurrency;
    Db db = env.database("rr", concurrency + 4);
    // not primed: the responder reads this topic from its start, and a probe is no request
    requests = env.topic("rr-requests", ConsumerBench.PARTITIONS);
    String replies = env.primedTopic("rr-replies", 1);
    Subscription sub =
        Subscription.builder("rr-" + UUID.randomUUID())
            .topics(requests)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .concurrency(concurrency)
            .build();
    Payload answer = Payload.json("{\"authorised\":true}");
    KafkaResponder responder = KafkaResponder.builder(env.bootstrap()).build();
    open.add(responder);
    timings = new ResponderTimings(responder.handler(sub, d -> answer));
    KafkaSubscriber server =
        KafkaSubscriber.builder(env.bootstrap(), sub)
            .inbox(PostgresInboxStore.create(db.dataSource()))
            .handler(timings)
            .build();
    open.add(server);
    server.start();
    requester =
        KafkaRequester.builder(env.bootstrap(), replies)
            .maxInFlight(50_000)
            .rememberedRequests(0)
            .build()
            .start();
    open.add(requester);

    echoRequests = env.primedTopic("echo-requests", ConsumerBench.PARTITIONS);
    echoReplies = env.primedTopic("echo-replies", 1);
    Map<String, Object> producerConfig = new HashMap<>();
    producerConfig.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrap());
    producerConfig.put(ProducerConfig.ACKS_CONFIG, "all");
    producerConfig.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    producerConfig.put(ProducerConfig.LINGER_MS_CONFIG, 0);
    Map<String, Object> consumerConfig = new HashMap<>();
    consumerConfig.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrap());
    consumerConfig.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 10);
    consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    client = producer(producerConfig);
    open.add(client);
    KafkaProducer<byte[], byte[]> echoProducer = producer(producerConfig);
    open.add(echoProducer);
    KafkaConsumer<byte[], byte[]> echoConsumer = consumer(consumerConfig);
    KafkaConsumer<byte[], byte[]> replyConsumer = consumer(consumerConfig);
    List<TopicPartition> parts = new ArrayList<>();
    for (int p = 0; p < ConsumerBench.PARTITIONS; p++) {
      parts.add(new TopicPartition(echoRequests, p));
    }
    echoConsumer.assign(parts);
    echoConsumer.seekToEnd(parts);
    parts.forEach(echoConsumer::position);
    TopicPartition replyPart = new TopicPartition(echoReplies, 0);
    replyConsumer.assign(List.of(replyPart));
    replyConsumer.seekToEnd(List.of(replyPart));
    replyConsumer.position(replyPart);
    threads.add(
        Thread.ofPlatform()
            .name("bench-echo")
            .start(() -> {
              try (echoConsumer) {
                while (running.get()) {
                  for (ConsumerRecord<byte[], byte[]> r :
                      echoConsumer.poll(Duration.ofMillis(100))) {
                    echoProducer.send(new ProducerRecord<>(echoReplies, 0, r.key(), r.value()));
                  }
                }
              }
            }));
    threads.add(
        Thread.ofPlatform()
            .name("bench-echo-replies")
            .start(() -> {
              try (replyConsumer) {
                while (running.get()) {
                  for (ConsumerRecord<byte[], byte[]> r :
                      replyConsumer.poll(Duration.ofMillis(100))) {
                    CompletableFuture<Void> f =
                        echoes.remove(new String(r.key(), StandardCharsets.UTF_8));
                    if (f != null) {
                      f.complete(null);
                    }
                  }
                }
              }
            }));
  }

  @Override
  public String transport() {
    return "kafka";
  }

  @Override
  public CompletableFuture<?> request(int i) {
    return requester.request(
        Message.builder(requests, "charge.authorise")
            .key("k" + (i % BenchEnv.KEYS))
            .jsonPayload(BenchEnv.payload(i))
            .build(),
        Duration.ofMinutes(5));
  }

  @Override
  public CompletableFuture<?> echo(int i) {
    String id = UUID.randomUUID().toString();
    CompletableFuture<Void> f = new CompletableFuture<Void>().orTimeout(5, TimeUnit.MINUTES);
    echoes.put(id, f);
    client.send(
        new ProducerRecord<>(
            echoRequests,
            id.getBytes(StandardCharsets.UTF_8),
            BenchEnv.payload(i).getBytes(StandardCharsets.UTF_8)));
    return f;
  }

  @Override
  public String profile() {
    return timings.takeSummary();
  }

  @Override
  public String settings() {
    return ConsumerBench.PARTITIONS
        + " request partitions, responder concurrency "
        + concurrency
        + ", one inbox transaction per request storing the reply, reply produced (acks=all) after"
        + " the commit; echo with the same client settings (acks=all, idempotence, linger.ms=0,"
        + " fetch.max.wait.ms=10), no database";
  }

  private static KafkaProducer<byte[], byte[]> producer(Map<String, Object> config) {
    return new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
  }

  private static KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> config) {
    return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  @Override
  public void close() throws Exception {
    running.set(false);
    for (Thread t : threads) {
      t.join();
    }
    for (AutoCloseable c : open.reversed()) {
      c.close();
    }
  }
}
