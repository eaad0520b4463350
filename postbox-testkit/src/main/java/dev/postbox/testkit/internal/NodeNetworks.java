package dev.postbox.testkit.internal;

import dev.postbox.testkit.InfrastructureStartupException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * One network namespace per node of a cluster, so that a test can cut one node off from its peers
 * while clients still reach every node. Made with iproute2 (root only): a bridge {@code pbxb<s>} in
 * this namespace with address {@code 10.214.<s>.1/24}, and per node {@code i} a namespace {@code
 * pbxn<s>-<i>} joined to the bridge by a veth pair, with address {@code 10.214.<s>.<11+i>/24} and a
 * default route through the bridge. Nodes reach each other over the bridge (layer 2: no IP
 * forwarding needed), and processes in this namespace reach them through the bridge's address.
 *
 * <p>{@link #cutOff(int)} adds {@code blackhole} routes in the node's namespace to every other
 * node's address and in every other node's namespace to its address: packets between them are
 * dropped (timeouts, not refused connections, as when a switch fails), while clients in this
 * namespace still reach the node; {@link #reconnect(int)} deletes them, and connections that
 * survived the cut resume. Slot {@code s} is the first whose bridge does not exist yet, so several
 * clusters on one machine do not collide. {@link #close()} removes all of it, killing what still
 * runs in the namespaces (a shutdown hook does so too; after a {@code kill -9} of this JVM, {@code
 * ip netns delete} and {@code ip link delete} clean up by hand).
 *
 * <p>Why hand-written: iproute2 is the interface the kernel offers for namespaces; no Java library
 * wraps it.
 */
public final class NodeNetworks implements AutoCloseable {

  private static final String PREFIX = "10.214.";

  private final int slot;
  private final int nodes;
  private final List<String> cleanup = new ArrayList<>();
  private final Set<Integer> cut = new TreeSet<>();

  private NodeNetworks(int slot, int nodes) {
    this.slot = slot;
    this.nodes = nodes;
  }

  /**
   * Why namespaces cannot be made on this machine (not root, no {@code ip}, namespaces or bridges
   * refused), or empty if they can.
   */
  public static Optional<String> unavailable() {
    try {
      if (!"0".equals(run(false, "id", "-u").strip())) {
        return Optional.of("a node's own network namespace needs root (this user is not root)");
      }
    } catch (RuntimeException e) {
      return Optional.of("cannot tell whether this user is root: " + e.getMessage());
    }
    if (!Files.isExecutable(Path.of("/usr/sbin/ip")) && !Files.isExecutable(Path.of("/sbin/ip"))) {
      return Optional.of("network namespaces need iproute2's ip command (not found)");
    }
    String probe = "pbxq" + ProcessHandle.current().pid() % 100_000;
    try {
      run(true, "ip", "netns", "add", probe);
      run(true, "ip", "netns", "delete", probe);
      run(true, "ip", "link", "add", probe, "type", "bridge");
      run(true, "ip", "link", "delete", probe);
      return Optional.empty();
    } catch (RuntimeException e) {
      return Optional.of("cannot make a network namespace and a bridge: " + e.getMessage());
    }
  }

  /**
   * Makes the bridge, the {@code nodes} namespaces and their links in the first free slot.
   *
   * @throws InfrastructureStartupException naming the command that failed, or why namespaces are
   *     unavailable here
   */
  public static NodeNetworks create(int nodes) {
    if (nodes < 1 || nodes > 50) {
      throw new IllegalArgumentException("nodes must be between 1 and 50, was " + nodes);
    }
    Optional<String> why = unavailable();
    if (why.isPresent()) {
      throw new InfrastructureStartupException(
          "cannot give each node its own network: " + why.get());
    }
    // the bridge's name claims the slot: the kernel refuses a second link of that name, so two
    // JVMs starting clusters at once take different slots (a name seen taken is skipped outright)
    Set<String> links = new HashSet<>();
    for (String line : run(true, "ip", "-o", "link", "show").split("\n")) {
      String[] f = line.split(":\\s+");
      if (f.length > 1) {
        links.add(f[1].split("@")[0].strip());
      }
    }
    for (int slot = 1; slot <= 250; slot++) {
      if (links.contains("pbxb" + slot)) {
        continue;
      }
      String bridge = "pbxb" + slot;
      try {
        run(true, "ip", "link", "add", bridge, "type", "bridge", "forward_delay", "0");
      } catch (IllegalStateException e) {
        if (e.getMessage().contains("File exists")) {
          continue; // another JVM took this slot just now
        }
        throw new InfrastructureStartupException(
            "cannot give each node its own network: " + e.getMessage(), e);
      }
      NodeNetworks n = new NodeNetworks(slot, nodes);
      n.cleanup.add("ip link delete " + bridge);
      Runtime.getRuntime().addShutdownHook(new Thread(n::close, "postbox-node-networks-cleanup"));
      try {
        n.setUp();
      } catch (RuntimeException e) {
        n.close();
        throw new InfrastructureStartupException(
            "cannot give each node its own network: " + e.getMessage(), e);
      }
      return n;
    }
    throw new InfrastructureStartupException("no free slot for the nodes' network namespaces");
  }

  private synchronized void setUp() {
    String bridge = "pbxb" + slot; // made by create(), which claimed the slot with it
    run(true, "ip", "addr", "add", PREFIX + slot + ".1/24", "dev", bridge);
    run(true, "ip", "link", "set", bridge, "up");
    for (int i = 0; i < nodes; i++) {
      String ns = namespace(i);
      String host = "pbxv" + slot + "-" + i; // at most 15 characters: interface names are short
      run(true, "ip", "netns", "add", ns);
      cleanup.add(0, "ip netns delete " + ns); // takes its veth end and the peer along
      // an earlier user of this slot may have left its link behind: a deleted namespace lives on
      // (with its veth pair) while its sockets do, and a connection cut off by a blackhole route
      // retransmits for minutes. The slot is this instance's now (it made the bridge), so the link
      // is stale; deleting one end of a veth pair deletes both.
      run(false, "ip", "link", "delete", host);
      run(true, "ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns);
      run(true, "ip", "link", "set", host, "master", bridge);
      run(true, "ip", "link", "set", host, "up");
      inNamespace(i, "link", "set", "lo", "up");
      inNamespace(i, "addr", "add", address(i) + "/24", "dev", "eth0");
      inNamespace(i, "link", "set", "eth0", "up");
      inNamespace(i, "route", "add", "default", "via", PREFIX + slot + ".1");
    }
  }

  /** How many nodes have a namespace. */
  public int size() {
    return nodes;
  }

  /** Node {@code i}'s address: its servers listen on it, and its peers and clients reach it so. */
  public String address(int i) {
    check(i);
    return PREFIX + slot + "." + (11 + i);
  }

  /** Node {@code i}'s namespace. */
  public String namespace(int i) {
    check(i);
    return "pbxn" + slot + "-" + i;
  }

  /** The command that runs a program in node {@code i}'s namespace (it execs the program). */
  public List<String> launcher(int i) {
    return List.of("ip", "netns", "exec", namespace(i));
  }

  /** The nodes cut off now. */
  public synchronized Set<Integer> cutOff() {
    return Set.copyOf(cut);
  }

  /**
   * Drops every packet between node {@code i} and the other nodes, both ways; clients outside the
   * nodes' namespaces still reach it. Does nothing if it is cut off already.
   */
  public synchronized void cutOff(int i) {
    check(i);
    if (!cut.add(i)) {
      return;
    }
    for (int j = 0; j < nodes; j++) {
      if (j != i) {
        inNamespace(i, "route", "replace", "blackhole", address(j) + "/32");
        inNamespace(j, "route", "replace", "blackhole", address(i) + "/32");
      }
    }
  }

  /** Lets node {@code i}'s packets through again. Does nothing if it is not cut off. */
  public synchronized void reconnect(int i) {
    check(i);
    if (!cut.remove(i)) {
      return;
    }
    for (int j = 0; j < nodes; j++) {
      if (j != i && !cut.contains(j)) { // a node still cut off keeps its routes both ways
        inNamespace(i, "route", "del", "blackhole", address(j) + "/32");
        inNamespace(j, "route", "del", "blackhole", address(i) + "/32");
      }
    }
  }

  @Override
  public synchronized void close() {
    if (!cleanup.isEmpty()) {
      killLeftovers();
    }
    for (String c : cleanup) {
      try {
        run(true, c.split(" "));
      } catch (RuntimeException ignored) {
        // gone already (deleting a namespace deletes its veth pair)
      }
    }
    cleanup.clear();
    cut.clear();
  }

  /**
   * Kills ({@code kill -9}) what still runs in the nodes' namespaces: daemons the nodes started
   * there and that outlive them (Erlang's {@code epmd}), which would otherwise keep a deleted
   * namespace alive.
   */
  private void killLeftovers() {
    for (int i = 0; i < nodes; i++) {
      try {
        for (String pid : run(false, "ip", "netns", "pids", namespace(i)).split("\\s+")) {
          if (pid.matches("[0-9]+")) {
            ProcessHandle.of(Long.parseLong(pid)).ifPresent(ProcessHandle::destroyForcibly);
          }
        }
      } catch (RuntimeException ignored) {
        // the namespace is gone already
      }
    }
  }

  @Override
  public String toString() {
    return "NodeNetworks[" + nodes + " nodes on " + PREFIX + slot + ".0/24]";
  }

  private void check(int i) {
    if (i < 0 || i >= nodes) {
      throw new IllegalArgumentException(
          "node must be between 0 and " + (nodes - 1) + ", was " + i);
    }
  }

  /** Runs {@code ip <args>} in node {@code i}'s namespace ({@code ip -n}: no new mount space). */
  private void inNamespace(int i, String... ipArguments) {
    List<String> c = new ArrayList<>(List.of("ip", "-n", namespace(i)));
    c.addAll(List.of(ipArguments));
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
