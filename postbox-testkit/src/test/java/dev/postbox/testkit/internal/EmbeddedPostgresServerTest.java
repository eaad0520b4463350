package dev.postbox.testkit.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.testkit.InfrastructureStartupException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A start that runs out of time (as under load, during crash recovery) must leave nothing behind:
 * the next start on the same data directory, in the same JVM, succeeds. Before this was handled,
 * zonky's orphaned {@code pg_ctl} and postmaster kept the data directory and its lock file stayed
 * locked by this JVM, so every retry failed with an {@code OverlappingFileLockException} (a CI
 * failure: "did not start: null").
 */
@Tag("integration")
class EmbeddedPostgresServerTest {

  @Test
  void aStartThatTimesOutLeavesNoProcessAndNoLockAndTheNextStartSucceeds(@TempDir Path dir)
      throws Exception {
    // a zero wait: zonky gives up at once, while pg_ctl is still starting the postmaster
    EmbeddedPostgresServer impatient =
        new EmbeddedPostgresServer(
            new EmbeddedPostgresServer.Settings(Optional.of(dir), Map.of(), Duration.ZERO));
    assertThatThrownBy(impatient::start)
        .isInstanceOf(InfrastructureStartupException.class)
        .hasMessageContaining("IOException: Gave up waiting for server to start");
    assertThat(impatient.isRunning()).isFalse();
    Path data = dir.resolve("data");
    PostmasterProcesses processes = new PostmasterProcesses(data);
    assertThat(processes.postmaster()).isEmpty();
    assertThat(processes.awaitExit(Duration.ZERO)).as("no process of %s left", data).isTrue();
    assertThat(data.resolve(EmbeddedPostgresServer.ZONKY_LOCK_FILE)).doesNotExist();
    impatient.close();

    try (EmbeddedPostgresServer pg =
        new EmbeddedPostgresServer(
            new EmbeddedPostgresServer.Settings(
                Optional.of(dir), Map.of(), Duration.ofMinutes(3)))) {
      pg.start();
      try (Connection c = DriverManager.getConnection(pg.jdbcUrl());
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT 1")) {
        assertThat(rs.next()).isTrue();
      }
      pg.restart();
      assertThat(processes.postmaster()).isPresent();
    }
    assertThat(processes.postmaster()).isEmpty();
    assertThat(Files.exists(data.resolve("PG_VERSION"))).isTrue(); // a given directory is kept
  }

  @Test
  void aRestartWhosePortWasTakenFailsQuotingTheServersLog(@TempDir Path dir) throws Exception {
    try (EmbeddedPostgresServer pg =
        new EmbeddedPostgresServer(
            new EmbeddedPostgresServer.Settings(
                Optional.of(dir), Map.of(), Duration.ofSeconds(20)))) {
      pg.start();
      int port = URI.create(pg.jdbcUrl().substring("jdbc:".length())).getPort();
      // below the range outgoing connections take theirs from, where the machine leaves room
      FreePorts.candidates()
          .ifPresent(below -> assertThat(port).isBetween(below.low(), below.high()));
      pg.crash();
      // another process takes the port while the server is down (a listening socket that closes
      // every connection at once: one that left them open would hold zonky's readiness check
      // forever, as pgjdbc waits for the server's greeting without a timeout)
      try (ServerSocket squatter = new ServerSocket()) {
        squatter.setReuseAddress(true); // the old server's connections may be in TIME_WAIT
        squatter.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port));
        Thread.ofVirtual().start(() -> closeEveryConnection(squatter));
        assertThatThrownBy(pg::start)
            .isInstanceOf(InfrastructureStartupException.class)
            .hasMessageContaining("which ends:")
            .hasMessageContaining("could not bind");
      }
      // not started again on that port here: the squatter's closed connections can hold it for up
      // to a minute after it closed (a CI run's restart failed to bind), which this test cannot
      // wait out without depending on timing; the campaigns restart on the same port every round
    }
  }

  private static void closeEveryConnection(ServerSocket server) {
    while (!server.isClosed()) {
      try {
        server.accept().close();
      } catch (java.io.IOException closed) {
        return;
      }
    }
  }

  @Test
  void describeNamesTheClassWhenThereIsNoMessage() {
    assertThat(
            EmbeddedPostgresServer.describe(
                new IllegalStateException(
                    "outer", new java.nio.channels.OverlappingFileLockException())))
        .isEqualTo("IllegalStateException: outer, caused by OverlappingFileLockException");
  }
}
