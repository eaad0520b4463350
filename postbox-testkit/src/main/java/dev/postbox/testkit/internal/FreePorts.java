package dev.postbox.testkit.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Free TCP ports on 127.0.0.1 for the servers the test kit starts, taken from below the kernel's
 * range for outgoing connections ({@code net.ipv4.ip_local_port_range}) where there is room.
 *
 * <p>Why not the port the kernel hands a {@code ServerSocket(0)}: that port is from the same range
 * the kernel gives every outgoing connection. A server the tests crash and restart (PostgreSQL, the
 * Kafka broker) must come back on the port its clients know; while it is down, any connection made
 * on the machine can take that port as its local end, and the restart then fails to bind ("Address
 * already in use"). With two test lanes opening connections side by side this happened in CI: a
 * restarted PostgreSQL refused connections for its whole start-up timeout. Outgoing connections
 * never take a port below the range.
 */
public final class FreePorts {

  private static final Path LOCAL_PORT_RANGE = Path.of("/proc/sys/net/ipv4/ip_local_port_range");

  /** The lowest port handed out: below it are the well-known and most registered services. */
  static final int LOWEST = 10_000;

  /** Fewer candidates than this below the ephemeral range: fall back to the kernel's choice. */
  static final int MIN_CANDIDATES = 1_000;

  private FreePorts() {}

  /** A range of ports, both ends included. */
  record Range(int low, int high) {
    int size() {
      return high - low + 1;
    }
  }

  /**
   * {@code count} distinct ports that were free a moment ago, below the ephemeral range if the
   * machine leaves room there (else the kernel's choice).
   */
  public static int[] pick(int count) {
    Optional<Range> range = candidates();
    List<ServerSocket> sockets = new ArrayList<>();
    try {
      int[] ports = new int[count];
      for (int i = 0; i < count; i++) {
        ServerSocket s = range.isPresent() ? bindIn(range.get()) : bind(0);
        sockets.add(s);
        ports[i] = s.getLocalPort();
      }
      return ports;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot find a free port", e);
    } finally {
      for (ServerSocket s : sockets) {
        try {
          s.close();
        } catch (IOException ignored) {
          // nothing to do
        }
      }
    }
  }

  /**
   * The ports below the ephemeral range {@code [low, high]} from {@value #LOWEST}, if there are at
   * least {@value #MIN_CANDIDATES} of them.
   */
  static Optional<Range> candidates(Range ephemeral) {
    Range below = new Range(LOWEST, ephemeral.low() - 1);
    return below.size() >= MIN_CANDIDATES ? Optional.of(below) : Optional.empty();
  }

  /** The ports {@link #pick} takes from on this machine; empty where it takes the kernel's. */
  static Optional<Range> candidates() {
    return readLocalPortRange().flatMap(FreePorts::candidates);
  }

  /** Parses the kernel's "low high" line; empty if it is not two ports. */
  static Optional<Range> parseLocalPortRange(String text) {
    String[] parts = text.trim().split("\\s+");
    if (parts.length != 2) {
      return Optional.empty();
    }
    try {
      int low = Integer.parseInt(parts[0]);
      int high = Integer.parseInt(parts[1]);
      return low > 0 && low <= high && high <= 65_535
          ? Optional.of(new Range(low, high))
          : Optional.empty();
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  private static Optional<Range> readLocalPortRange() {
    // a stream, not Files.readString: a /proc file reports size 0, and readString returned "3"
    try (InputStream in = Files.newInputStream(LOCAL_PORT_RANGE)) {
      return parseLocalPortRange(new String(in.readAllBytes(), StandardCharsets.US_ASCII));
    } catch (IOException | RuntimeException e) {
      return Optional.empty(); // not Linux, or not readable: the kernel's choice
    }
  }

  /** A socket bound to a free port of {@code range}, starting the scan at a random port. */
  private static ServerSocket bindIn(Range range) throws IOException {
    int start = ThreadLocalRandom.current().nextInt(range.size());
    for (int i = 0; i < range.size(); i++) {
      int port = range.low() + (start + i) % range.size();
      try {
        return bind(port);
      } catch (IOException taken) {
        // in use: the next one
      }
    }
    return bind(0);
  }

  private static ServerSocket bind(int port) throws IOException {
    ServerSocket s = new ServerSocket();
    s.setReuseAddress(true);
    s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), 1);
    return s;
  }
}
