package dev.postbox.verify;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The network of the partitions scenario, made with iproute2 (root only): PostgreSQL and the broker
 * listen on two addresses of the loopback interface, and two network namespaces hold one relay and
 * one consumer, each joined to the root namespace by a veth pair with a default route through it. A
 * partition is a {@code blackhole} route in a namespace to one server's address: packets to it are
 * dropped (a silent partition: timeouts, not refused connections), while the other server stays
 * reachable; healing deletes the route, and connections that survived the cut resume.
 *
 * <p>Per slot {@code n} (the first whose namespaces do not exist): PostgreSQL on {@code
 * 10.213.n.1}, the broker on {@code 10.213.n.2}; namespace {@code pbxr<n>} ({@code 10.213.n.6},
 * root side {@code 10.213.n.5}) for the relay, {@code pbxc<n>} ({@code 10.213.n.10}, root side
 * {@code 10.213.n.9}) for the consumer. {@link #close()} removes all of it.
 */
final class NetworkPartitions implements AutoCloseable {

  /** Which child of which role is partitioned from which server. */
  enum Cut {
    /** The relay in its namespace loses PostgreSQL, keeps the broker. */
    RELAY_FROM_POSTGRES,
    /** The consumer in its namespace loses the broker (Kafka or RabbitMQ), keeps PostgreSQL. */
    CONSUMER_FROM_BROKER
  }

  /** The network allowed in the harness's pg_hba file (every slot's namespaces). */
  static final String CIDR = "10.213.0.0/16";

  private final int slot;
  private final List<String> cleanup = new ArrayList<>();

  private NetworkPartitions(int slot) {
    this.slot = slot;
  }

  /**
   * Why namespaces cannot be made here (not root, no {@code ip}, {@code ip netns add} refused), or
   * empty if they can.
   */
  static Optional<String> unavailable() {
    try {
      if (!"0".equals(run(false, "id", "-u").strip())) {
        return Optional.of("network namespaces need root (this user is not root)");
      }
    } catch (RuntimeException e) {
      return Optional.of("cannot tell whether this user is root: " + e.getMessage());
    }
    if (!Files.isExecutable(Path.of("/usr/sbin/ip")) && !Files.isExecutable(Path.of("/sbin/ip"))) {
      return Optional.of("network namespaces need iproute2's ip command (not found)");
    }
    String probe = "pbxprobe" + ProcessHandle.current().pid() % 100_000;
    try {
      run(true, "ip", "netns", "add", probe);
      run(true, "ip", "netns", "delete", probe);
      return Optional.empty();
    } catch (RuntimeException e) {
      return Optional.of("ip netns add failed: " + e.getMessage());
    }
  }

  /** Makes the addresses, namespaces and veth pairs in the first free slot. */
  static NetworkPartitions create() {
    java.util.Set<String> existing = new java.util.HashSet<>();
    for (String line : run(true, "ip", "netns", "list").split("\n")) {
      if (!line.isBlank()) {
        existing.add(line.strip().split("\\s+")[0]);
      }
    }
    int slot = 1;
    while (existing.contains("pbxr" + slot) || existing.contains("pbxc" + slot)) {
      slot++;
    }
    if (slot > 250) {
      throw new IllegalStateException("no free slot for the partitions' namespaces");
    }
    NetworkPartitions n = new NetworkPartitions(slot);
    // also on Ctrl-C or SIGTERM of the harness (not after its kill -9: then ip netns delete by
    // hand)
    Runtime.getRuntime().addShutdownHook(new Thread(n::close, "postbox-partitions-cleanup"));
    try {
      n.setUp();
    } catch (RuntimeException e) {
      n.close();
      throw e;
    }
    return n;
  }

  private synchronized void setUp() {
    String p = "10.213." + slot + ".";
    for (String a : List.of(postgresAddress(), brokerAddress())) {
      run(true, "ip", "addr", "add", a + "/32", "dev", "lo");
      cleanup.add(0, "ip addr del " + a + "/32 dev lo");
    }
    namespace("pbxr" + slot, p + "5", p + "6");
    namespace("pbxc" + slot, p + "9", p + "10");
  }

  private void namespace(String ns, String hostSide, String nsSide) {
    run(true, "ip", "netns", "add", ns);
    cleanup.add(0, "ip netns delete " + ns); // deleting it deletes its veth end and the peer
    run(true, "ip", "link", "add", ns + "h", "type", "veth", "peer", "name", ns + "n");
    cleanup.add(0, "ip link delete " + ns + "h");
    run(true, "ip", "link", "set", ns + "n", "netns", ns);
    run(true, "ip", "addr", "add", hostSide + "/30", "dev", ns + "h");
    run(true, "ip", "link", "set", ns + "h", "up");
    inNs(ns, "ip", "link", "set", "lo", "up");
    inNs(ns, "ip", "addr", "add", nsSide + "/30", "dev", ns + "n");
    inNs(ns, "ip", "link", "set", ns + "n", "up");
    inNs(ns, "ip", "route", "add", "default", "via", hostSide);
  }

  /** The address PostgreSQL listens on (besides 127.0.0.1). */
  String postgresAddress() {
    return "10.213." + slot + ".1";
  }

  /** The address the broker (Kafka or RabbitMQ) listens on (and Kafka advertises). */
  String brokerAddress() {
    return "10.213." + slot + ".2";
  }

  /** The launcher that runs a child in the namespace of {@code cut}'s process. */
  String[] launcher(Cut cut) {
    return new String[] {"ip", "netns", "exec", namespace(cut)};
  }

  /** Starts dropping {@code cut}'s packets. */
  void cut(Cut cut) {
    inNs(namespace(cut), "ip", "route", "replace", "blackhole", target(cut) + "/32");
  }

  /** Stops dropping them. */
  void heal(Cut cut) {
    inNs(namespace(cut), "ip", "route", "del", "blackhole", target(cut) + "/32");
  }

  /** Heals a cut if it is in place (for the end of a phase); never throws. */
  void healQuietly(Cut cut) {
    try {
      heal(cut);
    } catch (RuntimeException ignored) {
      // not cut
    }
  }

  private String namespace(Cut cut) {
    return (cut == Cut.RELAY_FROM_POSTGRES ? "pbxr" : "pbxc") + slot;
  }

  private String target(Cut cut) {
    return cut == Cut.RELAY_FROM_POSTGRES ? postgresAddress() : brokerAddress();
  }

  /** Writes a pg_hba file that trusts local connections and the namespaces' network. */
  static Path writeHbaFile(Path dir) {
    String hba =
        String.join(
            "\n",
            "# written by postbox verify (partitions): trust, test servers only",
            "local all all trust",
            "host all all 127.0.0.1/32 trust",
            "host all all ::1/128 trust",
            "host all all " + CIDR + " trust",
            "local replication all trust",
            "host replication all 127.0.0.1/32 trust",
            "host replication all " + CIDR + " trust",
            "");
    try {
      Files.createDirectories(dir);
      Path file = dir.resolve("pg_hba_partitions.conf");
      Files.writeString(file, hba, StandardCharsets.UTF_8);
      return file.toAbsolutePath();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the pg_hba file", e);
    }
  }

  @Override
  public synchronized void close() {
    for (String c : cleanup) {
      try {
        run(true, c.split(" "));
      } catch (RuntimeException ignored) {
        // already gone (deleting a namespace takes its veth pair along)
      }
    }
    cleanup.clear();
  }

  private static void inNs(String ns, String... command) {
    List<String> c = new ArrayList<>(List.of("ip", "netns", "exec", ns));
    c.addAll(List.of(command));
    run(true, c.toArray(String[]::new));
  }

  /** Runs a command; returns its output; if {@code check}, fails on a non-zero exit. */
  private static String run(boolean check, String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      p.getOutputStream().close();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", command) + ": timed out");
      }
      if (check && p.exitValue() != 0) {
        throw new IllegalStateException(
            String.join(" ", command) + ": exit " + p.exitValue() + ": " + out.strip());
      }
      return out;
    } catch (IOException e) {
      throw new IllegalStateException(String.join(" ", command) + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(String.join(" ", command) + ": interrupted", e);
    }
  }
}
