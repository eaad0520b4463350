package dev.postbox.testkit.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;

/** Free TCP ports on 127.0.0.1. */
public final class FreePorts {

  private FreePorts() {}

  /** {@code count} distinct ports that were free a moment ago. */
  public static int[] pick(int count) {
    List<ServerSocket> sockets = new ArrayList<>();
    try {
      int[] ports = new int[count];
      for (int i = 0; i < count; i++) {
        ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"));
        s.setReuseAddress(true);
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
}
