package dev.postbox.verify;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.CrashPoints;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.PostgresServer;
import dev.postbox.testkit.ProcessSupervisor;
import dev.postbox.testkit.ProcessSupervisor.Supervised;
import dev.postbox.testkit.RabbitMqServer;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code request-reply} scenario (on Kafka, or on RabbitMQ): a requester process ({@link
 * RrRequesterMain}) sends requests to a responder process ({@link RrResponderMain}, {@code
 * EFFECTIVELY_ONCE}, the reply stored with the inbox row) and journals what became of each. The
 * responder is halted again and again at {@code consumer.after-commit-before-completed} (the effect
 * committed, the reply not sent) and {@code consumer.after-effect-before-offset-commit} (the reply
 * sent, the request not acknowledged); the requester at {@code requester.after-send-before-reply}
 * (a request accepted by the broker, its reply not come); each is restarted, and a restarted
 * requester sends its open requests again with the same ids, as a retrying caller would.
 *
 * <p>Checked from the requester's journal and the responder's effect table {@code rr_effect} (no
 * unique constraint): every request <b>ends</b> (answered, or timed out with a message naming it;
 * none disappears silently), an answered request was applied <b>exactly once</b> and its reply
 * names that effect (replies to one request sent several times name the same effect), no request is
 * applied twice, no reply reaches the wrong request, and no effect belongs to a request never sent.
 * Inconclusive when an armed crash point never fired.
 *
 * <p>Not thread-safe; run one at a time.
 */
final class RequestReplyScenario {

  /** What the scenario found. */
  record Result(
      int requests,
      int sends,
      int answered,
      int timedOut,
      int failedThenAnswered,
      int sentAgain,
      Map<String, Integer> crashesFired,
      long effects,
      long duplicateEffects,
      long unended,
      long answeredWithoutEffect,
      long wrongReplies,
      long differentReplies,
      long unclearTimeouts,
      long unexpectedEffects,
      boolean done,
      String transport) {

    long violations() {
      return duplicateEffects
          + unended
          + answeredWithoutEffect
          + wrongReplies
          + differentReplies
          + unclearTimeouts
          + unexpectedEffects
          + (done ? 0 : 1);
    }

    boolean inconclusive() {
      return crashesFired.values().stream().anyMatch(n -> n == 0);
    }
  }

  static final String NAME = "request-reply";
  static final List<String> RESPONDER_POINTS =
      List.of(
          CrashPoints.CONSUMER_AFTER_COMMIT_BEFORE_COMPLETED,
          CrashPoints.CONSUMER_AFTER_EFFECT_BEFORE_OFFSET_COMMIT);
  static final String REQUESTER_POINT = CrashPoints.REQUESTER_AFTER_SEND;

  private static final Pattern EFFECT =
      Pattern.compile("\"request\":\"([^\"]+)\",\"effect\":(\\d+)");

  private final long seed;
  private final Path dir;
  private final PrintStream out;
  private final Map<String, AtomicInteger> fired = new ConcurrentHashMap<>();

  private final boolean rabbitmq;
  private int failovers; // 0: one PostgreSQL server; else a pair failed over that many times

  /** The fault's name in {@link #fired} (and the report's crashes fired). */
  static final String FAILOVER = Scenario.Fault.POSTGRES_FAILOVER.kind;

  /** The scenario on Kafka. */
  RequestReplyScenario(long seed, Path dir, PrintStream out) {
    this(seed, dir, out, false);
  }

  /**
   * The scenario on RabbitMQ ({@code rabbitmq}: a private node, or {@value RabbitMqServer#URL_ENV})
   * or on Kafka.
   */
  RequestReplyScenario(long seed, Path dir, PrintStream out, boolean rabbitmq) {
    this.seed = seed;
    this.dir = dir.toAbsolutePath(); // the broker and the children run elsewhere
    this.out = out;
    this.rabbitmq = rabbitmq;
  }

  /**
   * This scenario on a PostgreSQL primary with a synchronous standby ({@link FailoverPair}) failed
   * over {@code n} times while requests flow (each after a further share of the requests was
   * answered), or on one server ({@code n} 0, the default).
   */
  RequestReplyScenario failovers(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("failovers must not be negative: " + n);
    }
    this.failovers = n;
    return this;
  }

  /** The transport's name in the report. */
  String transport() {
    return rabbitmq ? "RabbitMQ" : "Kafka";
  }

  /**
   * Sends {@code requests} requests; each crash point is armed until it fired {@code fires} times.
   */
  Result run(int requests, int fires, Duration timeout) throws Exception {
    Files.createDirectories(dir);
    SplittableRandom random = new SplittableRandom(seed);
    RESPONDER_POINTS.forEach(p -> fired.put(p, new AtomicInteger()));
    fired.put(REQUESTER_POINT, new AtomicInteger());
    Path journal = dir.resolve("requester-journal.txt");
    String topic = "rr-requests-" + Long.toUnsignedString(seed, 36);
    String replies = "rr-replies-" + Long.toUnsignedString(seed, 36);
    Plan plan = new Plan(topic, replies, journal, requests, fires, timeout, random);
    if (failovers > 0) {
      fired.put(FAILOVER, new AtomicInteger());
      try (FailoverPair pair =
          FailoverPair.start(dir.resolve("postgres-pair"), true, dir.resolve("journals"))) {
        return onBroker(pair.current(), Optional.of(pair), plan);
      }
    }
    try (PostgresServer pg = PostgresServer.builder().directory(dir.resolve("postgres")).build()) {
      pg.start();
      return onBroker(pg, Optional.empty(), plan);
    }
  }

  /**
   * What one run sends and where: the request and reply topics, the requester's journal, how many
   * requests, how often each crash point fires, the requester's timeout and the arming's random.
   */
  private record Plan(
      String topic,
      String replies,
      Path journal,
      int requests,
      int fires,
      Duration timeout,
      SplittableRandom random) {}

  /** The scenario with PostgreSQL {@code pg} (on {@code pair} if present) and its broker. */
  private Result onBroker(PostgresServer pg, Optional<FailoverPair> pair, Plan plan)
      throws Exception {
    if (rabbitmq) {
      String url = System.getenv(RabbitMqServer.URL_ENV);
      RabbitMqServer rabbit =
          url != null && !url.isBlank()
              ? RabbitMqServer.external(url)
              : RabbitMqServer.startPrivate(
                  RabbitMqServer.findScript()
                      .orElseThrow(() ->
                          new IllegalStateException(
                              "no rabbitmq-server installed and "
                                  + RabbitMqServer.URL_ENV
                                  + " is not set")));
      try {
        return run(pg, pair, rabbit.uri(), plan);
      } finally {
        if (!rabbit.isExternal()) {
          rabbit.close();
        }
      }
    }
    try (KafkaBroker kafka =
        KafkaBroker.builder()
            .dataDirectory(dir.resolve("kafka"))
            .maxHeap("384m")
            .startupTimeout(Duration.ofMinutes(3))
            .build()) {
      kafka.start();
      kafka.createTopic(plan.topic(), 3);
      kafka.createTopic(plan.replies(), 1);
      return run(pg, pair, kafka.bootstrapServers(), plan);
    }
  }

  /** The scenario against {@code broker} (Kafka bootstrap servers, or an AMQP URI). */
  private Result run(PostgresServer pg, Optional<FailoverPair> pair, String broker, Plan plan)
      throws Exception {
    Path journal = plan.journal();
    int requests = plan.requests();
    String schema = pg.createSchema("rr");
    try (HikariDataSource ds = pg.dataSource(schema, 2)) {
      PostboxMigrations.migrate(ds);
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "CREATE TABLE rr_effect (id bigserial, request_id uuid NOT NULL, incarnation int"
                + " NOT NULL)");
      }
      boolean done;
      try (ProcessSupervisor supervisor =
          new ProcessSupervisor(Duration.ofMillis(100), this::exited)) {
        Supervised responder =
            supervisor.add(
                "responder",
                c ->
                    Fleet.jvm(RrResponderMain.class, dir, "responder", "192m")
                        .args(
                            pg.jdbcUrl(schema),
                            broker,
                            plan.topic(),
                            "rr-responder",
                            Integer.toString(c.incarnation())));
        Supervised requester =
            supervisor.add(
                "requester",
                c ->
                    Fleet.jvm(RrRequesterMain.class, dir, "requester", "192m")
                        .args(
                            broker,
                            plan.topic(),
                            plan.replies(),
                            journal.toString(),
                            Integer.toString(requests),
                            Long.toString(plan.timeout().toMillis())));
        supervisor.armer(c -> arm(c, responder, plan.fires(), plan.random()));
        supervisor.want(responder);
        responder.jvm().orElseThrow().awaitLogLine("started", Duration.ofMinutes(2));
        supervisor.want(requester);
        supervisor.startWatching();
        java.util.concurrent.atomic.AtomicBoolean finished =
            new java.util.concurrent.atomic.AtomicBoolean();
        Thread injector =
            Thread.ofPlatform()
                .name("rr-failovers")
                .start(() -> pair.ifPresent(pr -> failOver(pr, journal, requests, finished)));
        done = awaitDone(journal, Duration.ofMinutes(10));
        // no failover is due any more; one under way ends first (a kill without its promote would
        // leave no primary for the check)
        finished.set(true);
        injector.join(Duration.ofMinutes(3));
        supervisor.stopAll(
            List.of(requester, responder), "end of scenario", Duration.ofSeconds(20));
      }
      return check(requests, journal, ds, done);
    }
  }

  /** Arms the next incarnation with a crash point that has not fired {@code fires} times yet. */
  private Optional<String> arm(
      Supervised c, Supervised responder, int fires, SplittableRandom random) {
    if (c == responder) {
      for (int i = 0; i < RESPONDER_POINTS.size(); i++) {
        String p = RESPONDER_POINTS.get((c.incarnation() + i) % RESPONDER_POINTS.size());
        if (fired.get(p).get() < fires) {
          return Optional.of(p + "@" + (5 + random.nextInt(30)));
        }
      }
      return Optional.empty();
    }
    return fired.get(REQUESTER_POINT).get() < fires
        ? Optional.of(REQUESTER_POINT + "@" + (20 + random.nextInt(60)))
        : Optional.empty();
  }

  private void exited(Supervised c, ChildJvm jvm) {
    if (!c.expectedDeath().isEmpty()) {
      return;
    }
    int code = jvm.exitCode().orElse(-1);
    if (code == CrashPoints.EXIT_CODE && !c.armed().isEmpty()) {
      String point = c.armed().substring(0, c.armed().indexOf('@'));
      fired.get(point).incrementAndGet();
      out.printf("request-reply: %s halted at %s; restarting%n", c.name(), c.armed());
    } else {
      out.printf("request-reply: %s exited with %d; restarting%n", c.name(), code);
    }
  }

  /**
   * Fails {@code pair} over {@link #failovers} times, the i-th once i shares of the requests were
   * answered ({@code requests / (failovers + 1)} each), so every failover comes while requests are
   * in flight; no further one once {@code finished} (the requester is done).
   */
  private void failOver(
      FailoverPair pair,
      Path journal,
      int requests,
      java.util.concurrent.atomic.AtomicBoolean finished) {
    for (int i = 1; i <= failovers; i++) {
      long due = (long) i * requests / (failovers + 1);
      try {
        while (replies(journal) < due) {
          if (finished.get()) {
            return;
          }
          Thread.sleep(250);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      if (finished.get()) {
        return;
      }
      FailoverPair.Failover f = pair.failover();
      fired.get(FAILOVER).incrementAndGet();
      out.printf(
          "request-reply: PostgreSQL failed over after %d replies: primary %s killed -9, standby %s"
              + " writable %d ms after the kill%n",
          due, f.killed(), f.promoted(), f.promotedAfter().toMillis());
    }
  }

  /** The replies the requester journaled so far. */
  private static long replies(Path journal) throws java.io.IOException {
    if (!Files.exists(journal)) {
      return 0;
    }
    try (var lines = Files.lines(journal, StandardCharsets.UTF_8)) {
      return lines.filter(l -> l.startsWith("REPLY ")).count();
    }
  }

  private static boolean awaitDone(Path journal, Duration patience) throws Exception {
    long deadline = System.nanoTime() + patience.toNanos();
    while (System.nanoTime() < deadline) {
      if (Files.exists(journal)
          && Files.readAllLines(journal, StandardCharsets.UTF_8).contains("DONE")) {
        return true;
      }
      Thread.sleep(250);
    }
    return false;
  }

  /** One request's journal: its sends and how each attempt ended. */
  private static final class Journal {
    int sends;
    int replies;
    int timeouts;
    int failures;
    boolean endedLast; // its last send has an end
    final List<String> effectsNamed = new ArrayList<>();
  }

  private Result check(int requests, Path journalFile, HikariDataSource ds, boolean done)
      throws Exception {
    Map<String, Journal> byId = new HashMap<>();
    long wrong = 0;
    long unclear = 0;
    if (Files.exists(journalFile)) {
      for (String line : Files.readAllLines(journalFile, StandardCharsets.UTF_8)) {
        String[] p = line.split(" ", 3);
        if (p.length < 2) {
          continue;
        }
        Journal j = byId.computeIfAbsent(p[1], k -> new Journal());
        switch (p[0]) {
          case "SEND" -> {
            j.sends++;
            j.endedLast = false;
          }
          case "REPLY" -> {
            j.replies++;
            j.endedLast = true;
            Matcher m = EFFECT.matcher(p.length > 2 ? p[2] : "");
            if (m.find() && m.group(1).equals(p[1])) {
              j.effectsNamed.add(m.group(2));
            } else {
              wrong++;
            }
          }
          case "TIMEOUT" -> {
            j.timeouts++;
            j.endedLast = true;
            if (p.length < 3 || !p[2].contains(p[1])) {
              unclear++;
            }
          }
          default -> {
            j.failures++;
            j.endedLast = true;
          }
        }
      }
    }
    Map<String, List<String>> effects = new TreeMap<>();
    long effectRows = 0;
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT request_id, id FROM rr_effect")) {
      while (rs.next()) {
        effects.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getString(2));
        effectRows++;
      }
    }
    int sends = 0;
    int answered = 0;
    int timedOut = 0;
    int failedThenAnswered = 0;
    int sentAgain = 0;
    long unended = 0;
    long withoutEffect = 0;
    long different = 0;
    for (Map.Entry<String, Journal> e : byId.entrySet()) {
      Journal j = e.getValue();
      sends += j.sends;
      sentAgain += j.sends > 1 ? 1 : 0;
      if (!j.endedLast) {
        unended++;
      }
      List<String> applied = effects.getOrDefault(e.getKey(), List.of());
      if (j.replies > 0) {
        answered++;
        if (j.failures > 0 || j.timeouts > 0) {
          failedThenAnswered++;
        }
        if (applied.size() != 1) {
          withoutEffect += applied.isEmpty() ? 1 : 0;
        } else if (j.effectsNamed.stream().anyMatch(n -> !n.equals(applied.get(0)))) {
          different++;
        }
      } else if (j.timeouts > 0) {
        timedOut++;
      }
    }
    long duplicates = effectRows - effects.size();
    long unexpected = effects.keySet().stream().filter(id -> !byId.containsKey(id)).count();
    Map<String, Integer> crashes = new TreeMap<>();
    fired.forEach((k, v) -> crashes.put(k, v.get()));
    return new Result(
        byId.size(),
        sends,
        answered,
        timedOut,
        failedThenAnswered,
        sentAgain,
        crashes,
        effectRows,
        duplicates,
        unended + Math.max(0, requests - byId.size()),
        withoutEffect,
        wrong,
        different,
        unclear,
        unexpected,
        done,
        transport());
  }

  /** The result as text. */
  static void print(Result r, PrintStream out) {
    out.println();
    out.println(
        "request-reply ("
            + r.transport()
            + "; crash points "
            + String.join(", ", RESPONDER_POINTS)
            + " in the responder, "
            + REQUESTER_POINT
            + " in the requester):");
    out.printf(
        "  requests %d, sends %d (%d requests sent again after a requester crash), answered %d,"
            + " timed out %d%n",
        r.requests(), r.sends(), r.sentAgain(), r.answered(), r.timedOut());
    out.printf("  crashes fired %s%n", r.crashesFired());
    out.printf(
        "  effects %d; duplicate effects %d, requests without an end %d, answered without an"
            + " effect %d, replies to the wrong request %d, different replies to one request %d,"
            + " timeouts not naming their request %d, effects of unknown requests %d, done %s%n",
        r.effects(),
        r.duplicateEffects(),
        r.unended(),
        r.answeredWithoutEffect(),
        r.wrongReplies(),
        r.differentReplies(),
        r.unclearTimeouts(),
        r.unexpectedEffects(),
        r.done());
    out.println(
        "  result: "
            + (r.violations() > 0 ? "VIOLATION" : r.inconclusive() ? "INCONCLUSIVE" : "OK"));
  }
}
