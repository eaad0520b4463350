package dev.postbox.verify;

import com.sun.net.httpserver.HttpServer;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.RedisServer;
import dev.postbox.verify.RedisWindowCheck.Effect;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The {@code redis-window} scenario: measures the at-risk window of {@code DEDUPLICATED} consumers.
 * A consumer process (Redis idempotency store, effect = an HTTP call to an outside target the
 * harness serves) is halted again and again at {@code
 * consumer.after-effect-before-idempotency-complete}; the topic also carries republished copies of
 * some messages (as a relay would after a crash). Then an unarmed consumer drains the rest.
 *
 * <p>Checked from the target's own record of effects: <b>lost</b> (a message never applied) and
 * <b>unexplained duplicates</b> (a second effect of a message whose earlier effect came from an
 * incarnation that did not crash: dedupe failed) must be 0; <b>window duplicates</b> (a repeat
 * after a crashed incarnation's effect) are the window's measured cost, reported, not a violation.
 *
 * <p>Not thread-safe; run one at a time.
 */
final class RedisWindow {

  /** What the scenario measured. */
  record Result(
      int messages,
      int records,
      int crashesArmed,
      int crashesFired,
      long effects,
      long windowDuplicates,
      long unexplainedDuplicates,
      long lost,
      long unexpectedEffects,
      long leasesExpiredSeen,
      long duplicatesSuppressedSeen,
      boolean drained,
      int unexpectedExits) {

    long violations() {
      return lost + unexplainedDuplicates + unexpectedEffects + (drained ? 0 : 1);
    }

    boolean inconclusive() {
      return crashesFired == 0;
    }
  }

  /** The fault log's file name in the scenario's directory. */
  static final String FAULT_LOG = "faults.log";

  /**
   * The scenario as a campaign scenario's result, so that its run report is judged and counted like
   * the campaign's: the crashes that fired are its injections; lost messages, unexplained
   * duplicates and effects of messages never sent (counted with the duplicate effects: an effect
   * that should not exist) are violations, and so is a drain that did not finish (as a recovery
   * bound exceeded); the window's own duplicates are measured only (not a field of the campaign's
   * findings: its JSON file has them); the republished copies are the topic's duplicates.
   * Inconclusive when no crash fired.
   */
  static ScenarioResult asScenario(Result r) {
    Findings f =
        Findings.builder()
            .messages(r.messages())
            .lost(r.lost())
            .duplicateEffects(r.unexplainedDuplicates() + r.unexpectedEffects())
            .topicRecords(r.records())
            .topicDuplicates(r.records() - r.messages())
            .build();
    java.util.Map<String, Integer> fired =
        r.crashesFired() > 0 ? java.util.Map.of(POINT, r.crashesFired()) : java.util.Map.of();
    int missed = r.crashesArmed() - r.crashesFired();
    java.util.Map<String, Integer> notFired =
        missed > 0 ? java.util.Map.of(POINT, missed) : java.util.Map.of();
    return new ScenarioResult(
        VerifyCli.REDIS_WINDOW,
        1,
        r.crashesFired(),
        fired,
        notFired,
        f,
        0,
        !r.drained(),
        r.unexpectedExits(),
        r.inconclusive() ? List.of("no crash fired") : List.of());
  }

  static final int PARTITIONS = 3;
  static final long LEASE_MS = 2_000;
  static final String POINT = CrashPoints.CONSUMER_AFTER_EFFECT_BEFORE_IDEMPOTENCY_COMPLETE;

  private final long seed;
  private final Path dir;
  private final PrintStream out;
  private final List<Effect> effects = new CopyOnWriteArrayList<>();

  RedisWindow(long seed, Path dir, PrintStream out) {
    this.seed = seed;
    this.dir = dir;
    this.out = out;
  }

  /**
   * Runs the scenario with {@code messages} messages and up to {@code crashes} crashes; empty when
   * neither a redis-server binary nor {@code POSTBOX_REDIS_URL} is available (one line says so).
   */
  Optional<Result> run(int messages, int crashes) throws Exception {
    Optional<String> url =
        Optional.ofNullable(System.getenv(RedisServer.URL_ENV)).filter(s -> !s.isBlank());
    Optional<Path> binary = RedisServer.findBinary();
    if (url.isEmpty() && binary.isEmpty()) {
      out.println(
          "redis-window: skipped: no redis-server on the PATH and "
              + RedisServer.URL_ENV
              + " is not set");
      return Optional.empty();
    }
    Files.createDirectories(dir);
    SplittableRandom random = new SplittableRandom(seed);
    try (FaultLog log = new FaultLog(dir.resolve(FAULT_LOG))) {
      log.beginScenario(VerifyCli.REDIS_WINDOW + "#1");
      return Optional.of(run(messages, crashes, url, binary, random, log));
    }
  }

  private Result run(
      int messages,
      int crashes,
      Optional<String> url,
      Optional<Path> binary,
      SplittableRandom random,
      FaultLog log)
      throws Exception {
    try (RedisServer redis = url.isPresent() ? null : RedisServer.startPrivate(binary.get());
        KafkaBroker kafka =
            KafkaBroker.builder()
                .dataDirectory(dir.resolve("kafka"))
                .maxHeap("384m")
                .startupTimeout(Duration.ofMinutes(3))
                .build()) {
      String redisUri = url.orElseGet(() -> redis.uri());
      kafka.start();
      String topic = "redis-window-" + Long.toUnsignedString(seed, 36);
      String group = "redis-window";
      kafka.createTopic(topic, PARTITIONS);
      List<String> sent = publish(kafka.bootstrapServers(), topic, messages, random);
      HttpServer target = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      target.createContext(
          "/effect",
          ex -> {
            try (ex) {
              effects.add(
                  new Effect(
                      ex.getRequestHeaders().getFirst("X-Message-Id"),
                      Integer.parseInt(ex.getRequestHeaders().getFirst("X-Incarnation"))));
              byte[] body = ("done-" + effects.size()).getBytes(StandardCharsets.UTF_8);
              ex.sendResponseHeaders(200, body.length);
              ex.getResponseBody().write(body);
            }
          });
      target.start();
      String targetUrl = "http://127.0.0.1:" + target.getAddress().getPort() + "/effect";
      Set<Integer> crashed = new HashSet<>();
      long leasesExpired = 0;
      long suppressed = 0;
      int armed = 0;
      int incarnation = 0;
      boolean drained = false;
      try (Admin admin = admin(kafka.bootstrapServers())) {
        while (!drained) {
          incarnation++;
          boolean arm = armed < crashes;
          ChildJvm.Builder b =
              Fleet.jvm(RedisWindowConsumerMain.class, dir, "consumer-" + incarnation, "192m")
                  .args(
                      redisUri,
                      kafka.bootstrapServers(),
                      topic,
                      group,
                      targetUrl,
                      Integer.toString(incarnation),
                      Long.toString(LEASE_MS));
          int hit = 1 + random.nextInt(40);
          if (arm) {
            armed++;
            b.systemProperty(CrashPoints.PROPERTY, POINT + "@" + hit);
          }
          String name = "consumer-" + incarnation;
          try (ChildJvm child = b.start()) {
            if (arm) {
              Optional<Integer> exit = child.waitFor(Duration.ofSeconds(90));
              if (exit.isPresent() && exit.get() == CrashPoints.EXIT_CODE) {
                crashed.add(incarnation);
                log.fired(POINT, name, "halted at its hit " + hit + " and exited");
              } else if (exit.isEmpty()) {
                drained = caughtUp(admin, topic, group); // the point was never reached
                child.terminate(Duration.ofSeconds(10));
                log.notFired(POINT, name, "armed at hit " + hit + ", not reached in 90 s");
              } else {
                log.unexpectedExit(name, "exit " + exit.get() + "; log " + child.log());
              }
            } else {
              long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
              while (!caughtUp(admin, topic, group) && System.nanoTime() < deadline) {
                Thread.sleep(250);
              }
              drained = caughtUp(admin, topic, group);
              Thread.sleep(600); // one more STATS line
              child.terminate(Duration.ofSeconds(10));
              if (!drained) {
                break;
              }
            }
            long[] seen = lastStats(child.log());
            leasesExpired += seen[0];
            suppressed += seen[1];
          }
        }
      } finally {
        target.stop(0);
      }
      return check(
          messages,
          sent,
          armed,
          crashed,
          leasesExpired,
          suppressed,
          drained,
          log.unexpectedExits());
    }
  }

  private Result check(
      int messages,
      List<String> sent,
      int armed,
      Set<Integer> crashed,
      long leasesExpired,
      long suppressed,
      boolean drained,
      int unexpectedExits) {
    RedisWindowCheck.Tally t = RedisWindowCheck.check(Set.copyOf(sent), effects, crashed);
    return new Result(
        messages,
        sent.size(),
        armed,
        crashed.size(),
        effects.size(),
        t.windowDuplicates(),
        t.unexplainedDuplicates(),
        t.lost(),
        t.unexpected(),
        leasesExpired,
        suppressed,
        drained,
        unexpectedExits);
  }

  /**
   * Publishes {@code messages} messages and republishes a tenth of them (same ids); returns the id
   * of each record sent.
   */
  private static List<String> publish(
      String bootstrap, String topic, int messages, SplittableRandom random) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    List<Message> all = new ArrayList<>();
    for (int i = 0; i < messages; i++) {
      all.add(
          Message.builder(topic, "payment.requested")
              .key("k" + random.nextInt(200))
              .jsonPayload("{\"seq\":" + i + "}")
              .build());
    }
    List<Message> sent = new ArrayList<>(all);
    for (Message m : all) {
      if (random.nextInt(10) == 0) {
        sent.add(m); // a republish: the same id again, later in its key
      }
    }
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      List<Future<?>> fs = new ArrayList<>();
      for (Message m : sent) {
        fs.add(producer.send(KafkaRecords.toRecord(m)));
      }
      for (Future<?> f : fs) {
        f.get();
      }
    }
    return sent.stream().map(m -> m.id().toString()).toList();
  }

  private static Admin admin(String bootstrap) {
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    return Admin.create(ap);
  }

  /** Whether the group's committed offsets reached the end of every partition. */
  private static boolean caughtUp(Admin admin, String topic, String group) throws Exception {
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (int p = 0; p < PARTITIONS; p++) {
      latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
    }
    Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
        admin.listOffsets(latest).all().get();
    for (var e : ends.entrySet()) {
      OffsetAndMetadata c = committed.get(e.getKey());
      if (c == null || c.offset() < e.getValue().offset()) {
        return false;
      }
    }
    return true;
  }

  /** {leasesExpired, duplicates} of the last STATS line in a consumer's log. */
  private static long[] lastStats(Path log) throws IOException {
    long[] r = new long[2];
    for (String line : Files.readAllLines(log)) {
      int at = line.indexOf("STATS ");
      if (at < 0) {
        continue;
      }
      for (String kv : line.substring(at + 6).trim().split(" ")) {
        String[] p = kv.split("=");
        if (p[0].equals("leasesExpired")) {
          r[0] = Long.parseLong(p[1]);
        } else if (p[0].equals("duplicates")) {
          r[1] = Long.parseLong(p[1]);
        }
      }
    }
    return r;
  }

  /** The result as text. */
  static void print(Result r, PrintStream out) {
    out.println();
    out.println("redis-window (DEDUPLICATED, Redis store, crash point " + POINT + "):");
    out.printf(
        "  messages %d (records incl. republished copies %d), crashes fired %d of %d armed%n",
        r.messages(), r.records(), r.crashesFired(), r.crashesArmed());
    out.printf(
        "  effects %d; window duplicates (the measured cost) %d = %.2f per crash%n",
        r.effects(),
        r.windowDuplicates(),
        r.crashesFired() == 0 ? 0.0 : (double) r.windowDuplicates() / r.crashesFired());
    out.printf(
        "  lost %d, unexplained duplicates %d, effects of unpublished ids %d, drained %s; leases"
            + " expired seen %d, duplicates suppressed seen %d%n",
        r.lost(),
        r.unexplainedDuplicates(),
        r.unexpectedEffects(),
        r.drained(),
        r.leasesExpiredSeen(),
        r.duplicatesSuppressedSeen());
    out.println(
        "  result: "
            + (r.violations() > 0 ? "VIOLATION" : r.inconclusive() ? "INCONCLUSIVE" : "OK"));
  }
}
