package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.testkit.RabbitMqServer;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * {@code bench --only rr}: request/reply round trips on each transport (Kafka: {@link RrKafka};
 * RabbitMQ: {@link RrRabbit}, on a private node or {@value RabbitMqServer#URL_ENV}, skipped when
 * there is none) beside the broker's raw round trip (a bare client echo with the same settings), in
 * one JVM.
 *
 * <p>First the sustainable maximum: a burst of requests sent at once, answered per second from the
 * first send to the last reply, for Postbox and for the echo. Then latency at an offered rate the
 * responder sustains (open loop: a request is sent on schedule whether or not earlier ones were
 * answered): {@value #RATE} requests/s if that is at most {@value #HEADROOM_PERCENT}% of the
 * measured maximum, else {@value #HEADROOM_PERCENT}% of it (a rate the responder cannot keep up
 * with measures the queue in front of it, not a round trip), and again at {@value #LOW_RATE}
 * requests/s (names with {@code _at_100}). Each figure is the median of {@value #RUNS} runs after a
 * warm-up, echo and Postbox runs alternating, with the spread ((max - min) / median) in its note.
 *
 * <p>Responder concurrency: the subscription's default ({@link Subscription#DEFAULT_CONCURRENCY}),
 * or {@code POSTBOX_BENCH_RR_CONCURRENCY}; {@code POSTBOX_BENCH_RR_TRANSPORTS} (e.g. {@code
 * rabbitmq}) runs only the transports named (for working on one).
 */
public final class RrBench {

  /** The offered rate, requests per second. */
  static final int RATE = 1_000;

  /** A low offered rate, for comparison. */
  static final int LOW_RATE = 100;

  /** The largest share of the measured maximum offered in the latency runs. */
  static final int HEADROOM_PERCENT = 75;

  /** Measured runs per figure (after a warm-up run). */
  static final int RUNS = 3;

  private final BenchEnv env;
  private final BenchConfig config;
  private final PrintStream log;

  public RrBench(BenchEnv env, BenchConfig config, PrintStream log) {
    this.env = env;
    this.config = config;
    this.log = log;
  }

  private static int concurrency() {
    String v = System.getenv("POSTBOX_BENCH_RR_CONCURRENCY");
    return v == null || v.isBlank() ? Subscription.DEFAULT_CONCURRENCY : Integer.parseInt(v);
  }

  private static boolean wanted(String transport) {
    String v = System.getenv("POSTBOX_BENCH_RR_TRANSPORTS");
    return v == null || v.isBlank() || Arrays.asList(v.split(",")).contains(transport);
  }

  private Duration phase() {
    return config.quick() ? Duration.ofSeconds(3) : Duration.ofSeconds(10);
  }

  private int burst() {
    return config.quick() ? 2_000 : 6_000;
  }

  /** Kafka's figures, then RabbitMQ's (if a node is available). */
  public List<Measurement> run() throws Exception {
    List<Measurement> out = new ArrayList<>();
    if (wanted("kafka")) {
      try (RrKafka kafka = new RrKafka(env, concurrency())) {
        out.addAll(measure(kafka));
      }
    }
    if (wanted("rabbitmq")) {
      out.addAll(rabbit());
    }
    return out;
  }

  private List<Measurement> rabbit() throws Exception {
    RabbitMqServer server;
    String url = System.getenv(RabbitMqServer.URL_ENV);
    if (url != null && !url.isBlank()) {
      server = RabbitMqServer.external(url);
    } else if (RabbitMqServer.findScript().isPresent()) {
      server = RabbitMqServer.startPrivate(RabbitMqServer.findScript().get());
    } else {
      log.println(
          "rr: RabbitMQ skipped: no rabbitmq-server installed and "
              + RabbitMqServer.URL_ENV
              + " is not set");
      return List.of();
    }
    try (RrRabbit rabbit = new RrRabbit(env, server.uri(), concurrency())) {
      return measure(rabbit);
    } finally {
      if (!server.isExternal()) {
        server.close();
      }
    }
  }

  /** The figures of one transport. */
  private List<Measurement> measure(RoundTrips rt) throws Exception {
    String t = rt.transport();
    List<Measurement> out = new ArrayList<>();
    log.printf("rr %s: warming up%n", t);
    for (int i = 0; i < 200; i++) {
      rt.request(i).get(); // one at a time: the responder's assignment, JIT
    }
    OpenLoop.drive(0, burst() / 2, rt::request);
    OpenLoop.drive(0, burst() / 2, rt::echo);

    rt.profile(); // a new interval
    double[] max = new double[RUNS];
    double[] echoMax = new double[RUNS];
    double[] cpu = new double[RUNS];
    double[] echoCpu = new double[RUNS];
    for (int r = 0; r < RUNS; r++) {
      OpenLoop.Run echoRun = OpenLoop.drive(0, burst(), rt::echo);
      echoMax[r] = echoRun.answeredPerS();
      echoCpu[r] = echoRun.cpuMsPerRequest();
      rt.profile(); // a new interval
      java.util.Map<String, Double> before = OpenLoop.cpuMsByProcess();
      OpenLoop.Run run = OpenLoop.drive(0, burst(), rt::request);
      java.util.Map<String, Double> after = OpenLoop.cpuMsByProcess();
      StringBuilder split = new StringBuilder();
      after.forEach((k, v) ->
          split.append(
              String.format(
                  Locale.ROOT, " %s %.2f", k, (v - before.getOrDefault(k, 0.0)) / burst())));
      max[r] = run.answeredPerS();
      cpu[r] = run.cpuMsPerRequest();
      log.printf(
          Locale.ROOT,
          "rr %s: burst of %d: %.0f answered/s, %.2f ms CPU a request (%s; echo %.0f/s, %.2f ms"
              + " CPU), %d failed, load %s; %s%n",
          t,
          burst(),
          max[r],
          cpu[r],
          split.toString().trim(),
          echoMax[r],
          echoCpu[r],
          run.failed(),
          loadAverage(),
          rt.profile());
    }
    double[] m = OpenLoop.medianAndSpread(max);
    double[] e = OpenLoop.medianAndSpread(echoMax);
    String burstNote =
        String.format(
            Locale.ROOT,
            "a burst of %,d requests sent at once, answered per second from the first send to the"
                + " last reply; %s",
            burst(),
            rt.settings());
    out.add(
        Measurement.of("rr_" + t + "_max_answered_per_s", m[0], "requests/s")
            .note(burstNote + "; " + runs(max, m[1])));
    out.add(
        Measurement.of("rr_" + t + "_raw_echo_max_per_s", e[0], "requests/s")
            .note(burstNote + "; " + runs(echoMax, e[1])));
    double[] c = OpenLoop.medianAndSpread(cpu);
    double[] ec = OpenLoop.medianAndSpread(echoCpu);
    String cpuNote =
        "CPU time of this JVM (requester, responder, echo) and its child processes (the"
            + " broker) per request in the bursts; PostgreSQL runs detached and is not counted";
    out.add(
        Measurement.of("rr_" + t + "_cpu_ms_per_request", c[0], "ms")
            .note(cpuNote + "; " + runs(cpu, c[1])));
    out.add(
        Measurement.of("rr_" + t + "_raw_echo_cpu_ms_per_request", ec[0], "ms")
            .note(cpuNote + "; " + runs(echoCpu, ec[1])));

    int sustained = (int) (m[0] * HEADROOM_PERCENT / 100 / 10) * 10;
    int rate = Math.max(10, Math.min(RATE, sustained));
    String why =
        rate == RATE
            ? RATE + " requests/s, at most " + HEADROOM_PERCENT + "% of the measured maximum"
            : RATE
                + " requests/s is more than "
                + HEADROOM_PERCENT
                + "% of the measured maximum ("
                + Math.round(m[0])
                + "/s): not measured, it would measure a queue; offered "
                + HEADROOM_PERCENT
                + "% of the maximum instead";
    out.add(Measurement.of("rr_" + t + "_offered_per_s", rate, "requests/s").note(why));
    out.addAll(latency(rt, rate, ""));
    out.addAll(latency(rt, Math.min(LOW_RATE, rate), "_at_" + LOW_RATE));
    return out;
  }

  /** p50/p99 of the echo and of Postbox at {@code rate}, their ratios, and the answered rate. */
  private List<Measurement> latency(RoundTrips rt, int rate, String suffix) throws Exception {
    String t = rt.transport();
    int n = (int) (rate * phase().toSeconds());
    OpenLoop.drive(rate, Math.min(n, rate), rt::echo); // a second of warm-up at this rate
    OpenLoop.drive(rate, Math.min(n, rate), rt::request);
    double[][] echo = new double[2][RUNS];
    double[][] rr = new double[2][RUNS];
    double[] answered = new double[RUNS];
    int failed = 0;
    for (int r = 0; r < RUNS; r++) {
      OpenLoop.Run er = OpenLoop.drive(rate, n, rt::echo);
      rt.profile();
      OpenLoop.Run pr = OpenLoop.drive(rate, n, rt::request);
      echo[0][r] = er.p50();
      echo[1][r] = er.p99();
      rr[0][r] = pr.p50();
      rr[1][r] = pr.p99();
      answered[r] = pr.answeredPerS();
      failed += pr.failed() + er.failed();
      log.printf(
          Locale.ROOT,
          "rr %s at %d/s: echo p50 %.1f p99 %.1f ms; postbox p50 %.1f p99 %.1f ms, %.0f answered/s,"
              + " sent %.0f/s, load %s; %s%n",
          t,
          rate,
          er.p50(),
          er.p99(),
          pr.p50(),
          pr.p99(),
          pr.answeredPerS(),
          pr.sentPerS(),
          loadAverage(),
          rt.profile());
    }
    String note =
        String.format(
            Locale.ROOT,
            "open loop at %d requests/s, %,d requests a run, %d timed out (5 min)",
            rate,
            n,
            failed);
    double[] e50 = OpenLoop.medianAndSpread(echo[0]);
    double[] e99 = OpenLoop.medianAndSpread(echo[1]);
    double[] p50 = OpenLoop.medianAndSpread(rr[0]);
    double[] p99 = OpenLoop.medianAndSpread(rr[1]);
    double[] ans = OpenLoop.medianAndSpread(answered);
    String pre = "rr_" + t;
    List<Measurement> out = new ArrayList<>();
    out.add(ms(pre + "_raw_echo_p50_ms" + suffix, e50, echo[0], note));
    out.add(ms(pre + "_raw_echo_p99_ms" + suffix, e99, echo[1], note));
    out.add(ms(pre + "_p50_ms" + suffix, p50, rr[0], note));
    out.add(ms(pre + "_p99_ms" + suffix, p99, rr[1], note));
    out.add(
        Measurement.of(pre + "_p50_vs_raw_echo" + suffix, p50[0] / Math.max(e50[0], 1e-3), "x")
            .note(pre + "_p50_ms" + suffix + " / " + pre + "_raw_echo_p50_ms" + suffix));
    out.add(
        Measurement.of(pre + "_p99_vs_raw_echo" + suffix, p99[0] / Math.max(e99[0], 1e-3), "x")
            .note(pre + "_p99_ms" + suffix + " / " + pre + "_raw_echo_p99_ms" + suffix));
    out.add(
        Measurement.of(pre + "_answered_per_s" + suffix, ans[0], "requests/s")
            .note(note + "; " + runs(answered, ans[1])));
    return out;
  }

  private static String loadAverage() {
    try {
      return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).split(" ")[0];
    } catch (java.io.IOException | RuntimeException e) {
      return "?";
    }
  }

  private static Measurement ms(String name, double[] medianSpread, double[] runs, String note) {
    return Measurement.of(name, medianSpread[0], "ms")
        .note(note + "; " + runs(runs, medianSpread[1]));
  }

  private static String runs(double[] values, double spread) {
    StringBuilder b = new StringBuilder("median of " + values.length + " runs [");
    for (int i = 0; i < values.length; i++) {
      b.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.1f", values[i]));
    }
    return b.append("], spread ").append(Math.round(spread * 100)).append('%').toString();
  }
}
