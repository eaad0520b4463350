package dev.postbox.testkit.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostboxInfrastructure;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("integration")
class OwnedDirectoriesTest {

  /** Starts the shared infrastructure, prints where its data is, waits to be killed. */
  static final class InfrastructureHolder {
    public static void main(String[] args) throws InterruptedException {
      PostboxInfrastructure infra = PostboxInfrastructure.shared();
      Path kafka = infra.kafka().dataDirectory().orElseThrow();
      Path pg = infra.postgres().dataDirectory().orElseThrow();
      System.out.println("infrastructure ready kafka=" + kafka + " pg=" + pg);
      new CountDownLatch(1).await();
    }
  }

  @Test
  void killMinus9OfATestJvmLeavesNothingBehindForLong() throws Exception {
    try (ChildJvm holder = ChildJvm.builder(InfrastructureHolder.class).start()) {
      String line = holder.awaitLogLine("infrastructure ready", Duration.ofSeconds(120));
      Path kafkaData = Path.of(line.substring(line.indexOf("kafka=") + 6, line.indexOf(" pg=")));
      Path pgData = Path.of(line.substring(line.indexOf("pg=") + 3));
      List<ProcessHandle> children =
          ProcessHandle.of(holder.pid()).orElseThrow().children().toList();
      assertThat(children).isNotEmpty(); // the broker's JVM
      long postmasterPid =
          Long.parseLong(Files.readAllLines(pgData.resolve("postmaster.pid")).get(0));

      holder.kill(); // no shutdown hooks

      // the broker dies with its parent
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> children.stream().noneMatch(ProcessHandle::isAlive));

      // the next JVM (here: this one) that creates an owned directory stops the orphaned
      // PostgreSQL server and deletes both data directories
      Path mine = OwnedDirectories.create("sweeper-");
      try {
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() ->
                ProcessHandle.of(postmasterPid).map(h -> !h.isAlive()).orElse(true)
                    && !Files.exists(kafkaData)
                    && !Files.exists(pgData.getParent()));
      } finally {
        OwnedDirectories.delete(mine);
      }
    }
  }
}
