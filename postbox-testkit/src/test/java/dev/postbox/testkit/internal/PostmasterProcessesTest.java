package dev.postbox.testkit.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which processes belong to a data directory, when its {@code postmaster.pid} is stale. */
class PostmasterProcessesTest {

  @Test
  void aStalePidFileNamingAnotherLiveProcessNamesNoPostmasterAndNothingIsKilled(@TempDir Path dir)
      throws Exception {
    // a killed postmaster's file, whose process id another process now has
    Process other = new ProcessBuilder("sleep", "60").start();
    try {
      Path data = Files.createDirectories(dir.resolve("data"));
      Files.writeString(data.resolve("postmaster.pid"), other.pid() + "\n" + data + "\n");
      PostmasterProcesses processes = new PostmasterProcesses(data);

      assertThat(processes.postmaster()).isEmpty();
      assertThat(processes.killAll(Duration.ofSeconds(10))).isZero();
      assertThat(other.isAlive()).isTrue();
      assertThat(processes.awaitExit(Duration.ZERO)).isTrue();
    } finally {
      other.destroyForcibly();
    }
  }

  @Test
  void aProcessNamingTheDirectoryIsItsAndIsKilled(@TempDir Path dir) throws Exception {
    Path data = Files.createDirectories(dir.resolve("data"));
    // stands for pg_ctl or the postmaster: its command line names the data directory
    Process server = new ProcessBuilder("sh", "-c", "sleep 60; : " + data).start();
    try {
      Files.writeString(data.resolve("postmaster.pid"), server.pid() + "\n" + data + "\n");
      PostmasterProcesses processes = new PostmasterProcesses(data);

      assertThat(processes.postmaster()).map(ProcessHandle::pid).contains(server.pid());
      assertThat(processes.killAll(Duration.ofSeconds(10))).isGreaterThanOrEqualTo(1);
      assertThat(server.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      assertThat(processes.postmaster()).isEmpty();
    } finally {
      server.destroyForcibly();
    }
  }
}
