package dev.postbox.testkit.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class FreePortsTest {

  @Test
  void theCandidatesAreTheRegisteredPortsBelowTheEphemeralRange() {
    assertThat(FreePorts.candidates(new FreePorts.Range(32_768, 60_999)))
        .contains(new FreePorts.Range(10_000, 32_767));
    // too little room below: the kernel's choice
    assertThat(FreePorts.candidates(new FreePorts.Range(10_500, 65_535))).isEmpty();
    assertThat(FreePorts.candidates(new FreePorts.Range(1_024, 65_535))).isEmpty();
  }

  @Test
  void theKernelsRangeIsParsedOrIgnored() {
    assertThat(FreePorts.parseLocalPortRange("32768\t60999\n"))
        .contains(new FreePorts.Range(32_768, 60_999));
    assertThat(FreePorts.parseLocalPortRange("")).isEmpty();
    assertThat(FreePorts.parseLocalPortRange("32768")).isEmpty();
    assertThat(FreePorts.parseLocalPortRange("60999 32768")).isEmpty();
    assertThat(FreePorts.parseLocalPortRange("a b")).isEmpty();
  }

  @Test
  void pickedPortsAreDistinctBindableAndBelowTheEphemeralRange() throws IOException {
    int[] ports = FreePorts.pick(5);
    assertThat(Arrays.stream(ports).distinct().count()).isEqualTo(5);
    Path range = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
    if (Files.isReadable(range)) {
      String text;
      try (var in = Files.newBufferedReader(range)) {
        text = in.readLine();
      }
      FreePorts.Range ephemeral = FreePorts.parseLocalPortRange(text).orElseThrow();
      if (FreePorts.candidates(ephemeral).isPresent()) {
        assertThat(Arrays.stream(ports).boxed().toList())
            .as("ephemeral range %s", ephemeral)
            .allMatch(p -> p >= FreePorts.LOWEST && p < ephemeral.low());
      }
    }
    for (int port : ports) {
      try (ServerSocket s = new ServerSocket()) {
        s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port));
        assertThat(s.getLocalPort()).isEqualTo(port);
      }
    }
  }
}
