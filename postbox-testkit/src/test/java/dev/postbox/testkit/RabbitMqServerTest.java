package dev.postbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import dev.postbox.testkit.internal.RabbitNodeProcess;
import java.net.URI;
import java.nio.file.Files;
import org.junit.jupiter.api.Test;

/** The private RabbitMQ node: it answers AMQP, survives kill -9 and restarts on its ports. */
class RabbitMqServerTest {

  @Test
  void privateNodeAnswersAmqpAndComesBackAfterKillAndStop() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    assumeFalse(server.isExternal(), "an external broker has no lifecycle to test");
    int port = URI.create(server.uri()).getPort();
    assertThat(RabbitNodeProcess.answersAmqp(port)).isTrue();
    assertThat(server.directory()).get().satisfies(d -> assertThat(d).isDirectory());
    assertThat(Files.readString(server.directory().orElseThrow().resolve(RabbitMqServer.PID_FILE)))
        .matches("\\d+\\s*");

    server.kill();
    assertThat(server.isRunning()).isFalse();
    assertThat(RabbitNodeProcess.answersAmqp(port)).isFalse();

    server.start();
    assertThat(server.isRunning()).isTrue();
    assertThat(RabbitNodeProcess.answersAmqp(port)).isTrue();
    assertThat(URI.create(server.uri()).getPort()).isEqualTo(port);
  }

  @Test
  void extraListenAddressesMustBeIpv4AndAreCheckedBeforeAnythingStarts() {
    assertThatThrownBy(() ->
            RabbitMqServer.startPrivate(java.nio.file.Path.of("/nowhere"), java.util.List.of("lo")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("not an IPv4 address: lo");
  }

  @Test
  void externalBrokerRefusesLifecycleCalls() {
    RabbitMqServer external = RabbitMqServer.external("amqp://guest:guest@127.0.0.1:1/%2F");
    assertThat(external.isExternal()).isTrue();
    assertThat(external.isRunning()).isTrue();
    assertThatThrownBy(external::kill).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(external::start).isInstanceOf(UnsupportedOperationException.class);
    external.close(); // nothing to do
  }
}
