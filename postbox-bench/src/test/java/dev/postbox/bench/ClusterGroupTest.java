package dev.postbox.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/**
 * The {@code cluster} group is opt-in: named with {@code --only}, never part of the default run
 * (three more broker JVMs), and the help text says so. Starts nothing.
 */
@Timeout(value = 1, unit = TimeUnit.MINUTES)
class ClusterGroupTest {

  @Test
  void clusterIsAnOptInGroup() {
    assertThat(BenchRunner.OPT_IN_GROUPS).contains("cluster");
    assertThat(BenchRunner.GROUPS).doesNotContain("cluster");
    assertThatCode(() ->
            new BenchRunner(
                BenchConfig.quickMode(),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                Set.of("cluster")))
        .doesNotThrowAnyException();
  }

  @Test
  void theHelpTextDescribesTheGroup() {
    String help = new CommandLine(new BenchCli()).getUsageMessage().replaceAll("\\s+", " ");
    assertThat(help).contains("cluster (a 3-broker Kafka cluster", "never part of the default run");
  }
}
