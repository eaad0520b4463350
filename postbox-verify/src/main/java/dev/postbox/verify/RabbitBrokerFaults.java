package dev.postbox.verify;

import dev.postbox.testkit.RabbitMqServer;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The RabbitMQ campaign's faults on the broker itself: every client connection closed by the node
 * ({@code rabbitmqctl close_all_connections}), and {@code kill -9} of the node, restarted (also
 * with the consumers stopped first, so that every shard queue holds a backlog at the kill). Only on
 * the command's own node (an external broker has no lifecycle control).
 */
final class RabbitBrokerFaults {

  private RabbitBrokerFaults() {}

  /** Closes every client connection; returns 1 if it fired. */
  static int dropConnections(RabbitMqServer rabbit, FaultLog log, Path dir) throws Exception {
    if (rabbit.isExternal()) {
      log.notFired(RabbitCampaign.DROP, "broker", "external broker: no rabbitmqctl");
      return 0;
    }
    int code = ctl(rabbit, dir, "close_all_connections", "verify: connection drop");
    if (code == 0) {
      log.fired(RabbitCampaign.DROP, "broker", "rabbitmqctl close_all_connections");
      return 1;
    }
    log.notFired(RabbitCampaign.DROP, "broker", "rabbitmqctl exit " + code);
    return 0;
  }

  /** {@code kill -9} of the node, then starts it again; returns 1 if it fired. */
  static int killAndRestart(RabbitMqServer rabbit, FaultLog log) {
    return killAndRestart(rabbit, log, RabbitCampaign.BROKER, "SIGKILL", () -> {});
  }

  /**
   * {@code kill -9} of the node logged as {@code fault} with {@code detail}, {@code whileDown} run
   * once it is down, then starts it again; returns 1 if it fired.
   */
  static int killAndRestart(
      RabbitMqServer rabbit, FaultLog log, String fault, String detail, Runnable whileDown) {
    if (rabbit.isExternal() || !rabbit.isRunning()) {
      return 0;
    }
    rabbit.kill();
    log.fired(fault, "broker", detail);
    whileDown.run();
    Campaign.sleep(2_000);
    rabbit.start();
    Campaign.sleep(10_000); // quorum queues elect their leaders; the clients recover
    return 1;
  }

  /** Runs {@code rabbitmqctl -n <node> args} against the private node; returns its exit code. */
  private static int ctl(RabbitMqServer rabbit, Path dir, String... args) throws Exception {
    int port = URI.create(rabbit.uri()).getPort();
    Path script = RabbitMqServer.findScript().orElseThrow();
    Path ctl = script.resolveSibling("rabbitmqctl");
    List<String> cmd =
        new ArrayList<>(List.of(ctl.toString(), "-n", "postbox-" + port + "@localhost"));
    cmd.addAll(List.of(args));
    ProcessBuilder pb =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(
                ProcessBuilder.Redirect.appendTo(dir.resolve("rabbitmqctl.log").toFile()));
    // the node's Erlang cookie is in its own HOME (the test kit's node directory)
    rabbit.directory().ifPresent(d -> pb.environment().put("HOME", d.toString()));
    pb.environment().remove("RABBITMQ_CONF_ENV_FILE");
    Process p = pb.start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return -1;
    }
    return p.exitValue();
  }
}
