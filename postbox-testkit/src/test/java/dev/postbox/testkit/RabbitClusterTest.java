package dev.postbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.rabbitmq.client.Address;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.MessageProperties;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A dedicated three-node cluster per test, since the test kills its nodes; in its own network
 * namespaces where this machine allows it (root), so that the same cluster also has a node cut off.
 */
@Tag("integration")
class RabbitClusterTest {

  @Test
  void theBuilderNamesTheOptionThatIsOutOfRange() {
    RabbitCluster.Builder b = RabbitCluster.Builder.of(Path.of("/nowhere"));
    assertThatThrownBy(() -> b.nodes(2).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("nodes");
    assertThatThrownBy(() -> RabbitCluster.Builder.of(Path.of("/x")).schedulers(0).build())
        .hasMessageContaining("schedulers");
    assertThatThrownBy(() ->
            RabbitCluster.Builder.of(Path.of("/x")).partitionHandling("pause_if_all_down").build())
        .hasMessageContaining("partitionHandling");
  }

  @Test
  void aKilledLeaderNodeIsReplacedAcknowledgedMessagesSurviveAndItRejoins() throws Exception {
    Optional<String> noNetworks = RabbitCluster.whyNoOwnNetworks();
    try (RabbitCluster cluster =
        RabbitCluster.builderOrSkip().ownNetworks(noNetworks.isEmpty()).build()) {
      assertThatThrownBy(cluster::uri).isInstanceOf(IllegalStateException.class);
      cluster.start();
      assertThat(cluster.runningNodes()).containsExactlyInAnyOrder(0, 1, 2);
      assertThat(cluster.addresses()).hasSize(3).doesNotHaveDuplicates();

      // declared through node 1: the quorum queue's leader starts there, members on all three
      try (Connection c = connect(cluster, 1, "declarer");
          Channel ch = c.createChannel()) {
        ch.queueDeclare("durable", true, false, false, Map.of("x-queue-type", "quorum"));
        ch.confirmSelect();
        ch.basicPublish("", "durable", MessageProperties.PERSISTENT_BASIC, bytes("one"));
        ch.waitForConfirmsOrDie(30_000);
      }
      assertThat(cluster.leaderOf("durable")).hasValue(1);
      assertThat(cluster.membersOf("durable")).isEqualTo(Set.of(0, 1, 2));

      try (Connection c = connect(cluster, 0, "watcher")) {
        assertThat(cluster.nodesOfConnection("watcher")).containsExactly(0);
        cluster.kill(1);
        assertThat(cluster.isRunning(1)).isFalse();
        await().atMost(Duration.ofSeconds(90)).until(() -> cluster.leaderOf("durable").isPresent());
        assertThat(cluster.leaderOf("durable")).isNotEqualTo(java.util.OptionalInt.of(1));
        try (Channel ch = c.createChannel()) {
          ch.confirmSelect();
          ch.basicPublish("", "durable", MessageProperties.PERSISTENT_BASIC, bytes("two"));
          ch.waitForConfirmsOrDie(60_000);
        }
      }
      cluster.start(1);
      assertThat(cluster.runningNodes()).isEqualTo(Set.of(0, 1, 2));
      try (Connection c = connect(cluster, 1, "reader");
          Channel ch = c.createChannel()) {
        assertThat(List.of(text(ch.basicGet("durable", true)), text(ch.basicGet("durable", true))))
            .containsExactly("one", "two");
      }

      if (noNetworks.isPresent()) {
        assertThatThrownBy(() -> cluster.cutOff(0))
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("ownNetworks");
      }
      assumeTrue(noNetworks.isEmpty(), "no node cut off here: " + noNetworks.orElse(""));
      aCutOffLeaderNodePausesItsSuccessorAcknowledgesAndItRejoins(cluster);
    }
  }

  /**
   * The node holding the queue's leader cut off from the other two (clients still reach it): with
   * pause_minority it pauses (refuses clients), the majority elects another leader that
   * acknowledges a write, and once reconnected the node runs in the cluster again, its member
   * online, and serves the message written while it was away.
   */
  private static void aCutOffLeaderNodePausesItsSuccessorAcknowledgesAndItRejoins(
      RabbitCluster cluster) throws Exception {
    await().atMost(Duration.ofSeconds(90)).until(() -> cluster.leaderOf("durable").isPresent());
    int cut = cluster.leaderOf("durable").getAsInt();
    int other = (cut + 1) % cluster.size();
    cluster.cutOff(cut);
    assertThat(cluster.cutOffNodes()).containsExactly(cut);
    // the majority's view: the cut-off node is gone and another node leads the queue
    await().atMost(Duration.ofSeconds(90)).until(() -> !cluster.runningNodes().contains(cut));
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> {
          OptionalInt leader = cluster.leaderOf("durable");
          return leader.isPresent() && leader.getAsInt() != cut;
        });
    // the cut-off node paused (pause_minority): it refuses clients although they reach it
    await().atMost(Duration.ofSeconds(90)).until(() -> !acceptsClients(cluster, cut));
    try (Connection c = connect(cluster, other, "writer");
        Channel ch = c.createChannel()) {
      ch.confirmSelect();
      ch.basicPublish("", "durable", MessageProperties.PERSISTENT_BASIC, bytes("three"));
      ch.waitForConfirmsOrDie(60_000);
    }
    cluster.reconnect(cut);
    assertThat(cluster.cutOffNodes()).isEmpty();
    await()
        .atMost(Duration.ofSeconds(120))
        .until(() ->
            cluster.runningNodes().equals(Set.of(0, 1, 2))
                && cluster.onlineMembersOf("durable").equals(Set.of(0, 1, 2))
                && acceptsClients(cluster, cut));
    try (Connection c = connect(cluster, cut, "rejoined");
        Channel ch = c.createChannel()) {
      assertThat(text(ch.basicGet("durable", true))).isEqualTo("three");
    }
  }

  /** Whether node {@code node} lets a client connect. */
  private static boolean acceptsClients(RabbitCluster cluster, int node) {
    try (Connection c = connect(cluster, node, "probe")) {
      return c.isOpen();
    } catch (Exception e) {
      return false;
    }
  }

  private static Connection connect(RabbitCluster cluster, int node, String name) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(cluster.uri());
    f.setAutomaticRecoveryEnabled(false);
    f.setConnectionTimeout(5_000);
    return f.newConnection(List.of(Address.parseAddress(cluster.address(node))), name);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String text(GetResponse r) {
    return r == null ? null : new String(r.getBody(), StandardCharsets.UTF_8);
  }
}
