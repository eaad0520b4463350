package dev.postbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.CrashPoints;
import dev.postbox.testkit.ProcessSupervisor.Supervised;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Restart-on-death of child JVMs: deaths reported once each, with the reason, then a restart. */
class ProcessSupervisorTest {

  private static final Duration READY = Duration.ofSeconds(60);

  /**
   * One reported death: the instance, its exit code, why (if on purpose) and what it was armed
   * with.
   */
  private record Exit(String instance, int code, String expected, String armed) {}

  @Test
  void aChildThatDiesIsRestartedArmedByTheArmerAndItsDeathReportedOnce(@TempDir Path dir)
      throws Exception {
    List<Exit> exits = new CopyOnWriteArrayList<>();
    try (ProcessSupervisor supervisor =
        new ProcessSupervisor(
            Duration.ofMillis(25),
            (c, jvm) ->
                exits.add(
                    new Exit(
                        c.instance(), jvm.exitCode().orElse(-1), c.expectedDeath(), c.armed())))) {
      // the first incarnation exits at once with code 3, the next ones run until stopped
      Supervised child =
          supervisor.add(
              "worker",
              c ->
                  c.incarnation() == 1
                      ? ChildJvm.builder(TestMains.Exiter.class)
                          .args("3")
                          .log(dir.resolve("worker-1.log"))
                      : ChildJvm.builder(TestMains.Sleeper.class)
                          .log(dir.resolve("worker-" + c.incarnation() + ".log")));
      supervisor.armer(c -> c.incarnation() == 1 ? Optional.of("some.point@2") : Optional.empty());
      supervisor.startWatching();
      supervisor.want(child);
      assertThat(child.armed()).isEqualTo("some.point@2");
      assertThat(child.jvm().orElseThrow().command())
          .contains("-D" + CrashPoints.PROPERTY + "=some.point@2");

      await().atMost(READY).until(() -> child.incarnation() == 2);
      supervisor.awaitStarted("sleeper ready", READY);
      assertThat(child.working("sleeper ready")).isTrue();
      assertThat(child.armed()).isEmpty();
      assertThat(exits).containsExactly(new Exit("worker#1", 3, "", "some.point@2"));

      // a kill on purpose: reported with its reason, and restarted since it is still wanted
      assertThat(supervisor.kill(child, "kill-9")).isTrue();
      assertThat(exits).hasSize(2).last().isEqualTo(new Exit("worker#2", 137, "kill-9", ""));
      assertThat(child.incarnation()).isEqualTo(3);
      assertThat(child.alive()).isTrue();

      // stopped and not kept: reported once, and the watcher does not bring it back
      supervisor.stop(child, "end of phase", false);
      assertThat(exits).hasSize(3).last().extracting(Exit::expected).isEqualTo("end of phase");
      Thread.sleep(200);
      assertThat(child.alive()).isFalse();
      assertThat(child.incarnation()).isEqualTo(3);
      assertThat(exits).hasSize(3);
    }
  }

  @Test
  void pauseAndResumeAndStopAllInOrder(@TempDir Path dir) throws Exception {
    List<String> exits = new CopyOnWriteArrayList<>();
    ProcessSupervisor supervisor =
        new ProcessSupervisor(Duration.ofMillis(25), (c, jvm) -> exits.add(c.instance()));
    Supervised a =
        supervisor.add("a", c -> ChildJvm.builder(TestMains.Sleeper.class).log(dir.resolve("a")));
    Supervised b =
        supervisor.add("b", c -> ChildJvm.builder(TestMains.Sleeper.class).log(dir.resolve("b")));
    supervisor.want(a);
    supervisor.want(b);
    supervisor.startWatching();
    supervisor.awaitStarted("sleeper ready", READY);

    assertThat(supervisor.pause(a)).isTrue();
    assertThat(a.paused()).isTrue();
    assertThat(supervisor.pause(a)).isFalse(); // already paused
    assertThat(supervisor.kill(a, "kill-9")).isFalse(); // a paused process is not killed
    assertThat(supervisor.resume(a)).isTrue();
    assertThat(supervisor.resume(a)).isFalse();

    supervisor.pause(b);
    supervisor.stopAll(List.of(b, a), "end of demo", Duration.ofSeconds(20));
    assertThat(a.alive()).isFalse();
    assertThat(b.alive()).isFalse();
    // a SIGTERM lets the shutdown hook run, even for a paused process (resumed first)
    assertThat(b.jvm().orElseThrow().exitCode()).isPresent();
    assertThat(exits).isEmpty(); // stopAll reports nothing and restarts nothing
    supervisor.stopAll(List.of(a, b), "again", Duration.ofSeconds(1)); // a no-op
    supervisor.close(); // a no-op too
  }
}
