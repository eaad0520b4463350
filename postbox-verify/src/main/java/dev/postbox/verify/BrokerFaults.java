package dev.postbox.verify;

import dev.postbox.testkit.KafkaBroker;
import dev.postbox.verify.Scenario.Fault;

/** Injects the broker fault: {@code kill -9} of the Kafka broker, then a start. */
final class BrokerFaults {

  private final CampaignEnvironment env;
  private final FaultLog log;

  BrokerFaults(CampaignEnvironment env, FaultLog log) {
    this.env = env;
    this.log = log;
  }

  /** {@link Fault#BROKER_RESTART}: fired if the broker was down and is running again. */
  void restart(Fault f) {
    KafkaBroker kafka = env.kafka();
    kafka.kill();
    boolean down = !kafka.isRunning();
    long t0 = System.nanoTime();
    env.ensureUp();
    if (down && kafka.isRunning()) {
      log.fired(
          f.kind, "kafka", "kill -9, back after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
    } else {
      log.notFired(f.kind, "kafka", "down=" + down + " running=" + kafka.isRunning());
    }
  }
}
