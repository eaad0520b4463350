package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.testkit.KafkaCluster;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code cluster} group: the same work on a three-broker Kafka cluster (the test kit's {@link
 * KafkaCluster}: KRaft, combined mode, topics with replication factor 3, {@code
 * min.insync.replicas=2}, producers with {@code acks=all}) and on the run's single broker
 * (replication factor 1), in one run: the polling relay's drain ({@link RelayBench#drainRun}) with
 * 1, 2 and 4 instances on the cluster and 1 on the single broker; the effectively-once batch
 * consumer ({@link ConsumerBench#eoBatchRun}) on each; commit to broker acknowledgement at a fixed
 * rate ({@link ClusterAckLatency}) on each. Each cluster figure carries the single broker's as its
 * baseline, so its ratio is cluster over single broker. Throughput runs of both take turns ({@link
 * Repeated#interleaved}), and so do the latency rounds. The cluster's three JVMs run beside
 * everything else on this machine.
 */
public final class ClusterBench {

  /** Each cluster JVM's maximum heap. */
  static final String BROKER_HEAP = "384m";

  /** The key prefix of the single broker's figures (the baselines). */
  static final String SINGLE = "cluster_single_broker_";

  private static final String CLUSTER_SETUP =
      "3 brokers (KRaft, combined mode, one JVM each, -Xmx"
          + BROKER_HEAP
          + "), replication factor 3, min.insync.replicas=2, acks=all";

  private static final String SINGLE_SETUP =
      "the run's single broker (replication factor 1), acks=all";

  private final BenchEnv env;
  private final BenchConfig config;
  private final PrintStream log;

  public ClusterBench(BenchEnv env, BenchConfig config, PrintStream log) {
    this.env = env;
    this.config = config;
    this.log = log;
  }

  /** Starts the cluster, measures, closes it: every figure in the order measured. */
  public List<Measurement> run() throws Exception {
    try (KafkaCluster cluster = KafkaCluster.builder().maxHeap(BROKER_HEAP).build()) {
      long t0 = System.nanoTime();
      cluster.start();
      log.printf(
          "bench: cluster: %d brokers ready in %.0f s at %s%n",
          cluster.size(), (System.nanoTime() - t0) / 1e9, cluster.bootstrapServers());
      try (BenchEnv onCluster = env.onCluster(cluster)) {
        List<Measurement> out = new ArrayList<>();
        out.addAll(relay(onCluster));
        out.addAll(consumer(onCluster));
        out.addAll(latency(onCluster));
        return out;
      }
    }
  }

  /** Runs per figure: 3 (1 in quick mode, where the report is checked, not the numbers). */
  private int runs() {
    return config.quick() ? 1 : 3;
  }

  private List<Measurement> relay(BenchEnv onCluster) throws Exception {
    RelayBench single = new RelayBench(env, config);
    RelayBench cluster = new RelayBench(onCluster, config);
    List<Measurement> m =
        Repeated.interleaved(
            List.of(
                SINGLE + "relay_1_instance_events_per_s",
                "cluster_relay_1_instance_events_per_s",
                "cluster_relay_2_instances_events_per_s",
                "cluster_relay_4_instances_events_per_s"),
            "events/s",
            runs(),
            List.of(
                single.drainRun(1), cluster.drainRun(1), cluster.drainRun(2), cluster.drainRun(4)));
    return againstFirst(m);
  }

  private List<Measurement> consumer(BenchEnv onCluster) throws Exception {
    ConsumerBench single = new ConsumerBench(env, config);
    ConsumerBench cluster = new ConsumerBench(onCluster, config);
    single.prepare();
    cluster.prepare();
    List<Measurement> m =
        Repeated.interleaved(
            List.of(SINGLE + "consumer_eo_batch_per_s", "cluster_consumer_eo_batch_per_s"),
            "msgs/s",
            runs(),
            List.of(single.eoBatchRun(), cluster.eoBatchRun()));
    return againstFirst(m);
  }

  /**
   * Commit to broker ack on each, in {@link #runs()} rounds whose order alternates (single broker
   * first in the odd rounds), so that a stall or a load that drifts does not fall on one side only;
   * each figure is the median of its rounds.
   */
  private List<Measurement> latency(BenchEnv onCluster) throws Exception {
    ClusterAckLatency latency = new ClusterAckLatency(config);
    List<ClusterAckLatency.Phase> single = new ArrayList<>();
    List<ClusterAckLatency.Phase> cluster = new ArrayList<>();
    for (int round = 1; round <= runs(); round++) {
      if (round % 2 == 1) {
        single.add(latency.measure(env, "clusterlat_single"));
        cluster.add(latency.measure(onCluster, "clusterlat_cluster"));
      } else {
        cluster.add(latency.measure(onCluster, "clusterlat_cluster"));
        single.add(latency.measure(env, "clusterlat_single"));
      }
      log.printf(
          "bench: cluster: commit to ack, round %d: single broker %s; cluster %s%n",
          round, single.getLast(), cluster.getLast());
    }
    Measurement p50 = figure(SINGLE + "commit_to_ack_p50_ms", single, true, SINGLE_SETUP);
    Measurement p99 = figure(SINGLE + "commit_to_ack_p99_ms", single, false, SINGLE_SETUP);
    return List.of(
        p50,
        p99,
        figure("cluster_commit_to_ack_p50_ms", cluster, true, CLUSTER_SETUP).against(p50),
        figure("cluster_commit_to_ack_p99_ms", cluster, false, CLUSTER_SETUP).against(p99));
  }

  private Measurement figure(
      String name, List<ClusterAckLatency.Phase> rounds, boolean p50, String setup) {
    double[] values = rounds.stream().mapToDouble(p -> p50 ? p.p50() : p.p99()).sorted().toArray();
    String runsNote =
        rounds.size() == 1
            ? "one round"
            : String.format(
                java.util.Locale.ROOT,
                "median of %d rounds %s, order alternating with the other Kafka's",
                rounds.size(),
                rounds.stream()
                    .map(p -> String.format(java.util.Locale.ROOT, "%.1f", p50 ? p.p50() : p.p99()))
                    .toList());
    return Measurement.of(name, values[values.length / 2], "ms")
        .note(rounds.getLast().note(setup) + "; " + runsNote);
  }

  /** The first figure (the single broker's) as every other's baseline, each note its setup. */
  private static List<Measurement> againstFirst(List<Measurement> m) {
    Measurement base = m.get(0).note(SINGLE_SETUP + "; " + m.get(0).note());
    List<Measurement> out = new ArrayList<>(List.of(base));
    for (Measurement c : m.subList(1, m.size())) {
      out.add(c.against(base).note(CLUSTER_SETUP + "; " + c.note()));
    }
    return out;
  }
}
