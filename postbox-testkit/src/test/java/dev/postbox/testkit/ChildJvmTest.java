package dev.postbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChildJvmTest {

  private static final Duration READY = Duration.ofSeconds(60);

  @Test
  void killMinus9AndLogLineDetection(@TempDir Path dir) throws Exception {
    Path log = dir.resolve("sleeper.log");
    try (ChildJvm jvm =
        ChildJvm.builder(TestMains.Sleeper.class)
            .args("a", "b")
            .systemProperty("greeting", "hello")
            .jvmOptions("-Xmx64m")
            .log(log)
            .start()) {
      String ready = jvm.awaitLogLine("sleeper ready", READY);
      assertThat(ready).isEqualTo("sleeper ready pid=" + jvm.pid());
      // stderr is merged into the same log
      assertThat(jvm.awaitLogLine(line -> line.startsWith("on stderr"), READY))
          .isEqualTo("on stderr: a,b hello");
      assertThat(jvm.isAlive()).isTrue();
      assertThat(jvm.exitCode()).isEmpty();
      assertThat(jvm.log()).isEqualTo(log);

      jvm.kill();
      assertThat(jvm.isAlive()).isFalse();
      assertThat(jvm.exitCode()).contains(137);
      assertThat(Files.readString(log)).doesNotContain("bye"); // no shutdown hooks after kill -9

      // start again: the log is appended, and awaitLogLine only sees the new run
      jvm.start();
      jvm.awaitLogLine("sleeper ready", READY);
      assertThat(jvm.logTail(10)).containsOnlyOnce("sleeper ready");
      assertThat(Files.readString(log).split("sleeper ready", -1)).hasSize(3);

      assertThat(jvm.terminate(Duration.ofSeconds(30))).isEqualTo(143);
      assertThat(Files.readString(log)).contains("bye");
    }
  }

  @Test
  void pauseFreezesTheProcessAndResumeContinuesIt() {
    try (ChildJvm jvm = ChildJvm.builder(TestMains.Sleeper.class).start()) {
      jvm.awaitLogLine("sleeper ready", READY);
      jvm.pause();
      assertThat(jvm.isPaused()).isTrue();
      await().atMost(Duration.ofSeconds(10)).until(() -> procState(jvm.pid()).equals("T"));
      jvm.resume();
      assertThat(jvm.isPaused()).isFalse();
      await().atMost(Duration.ofSeconds(10)).until(() -> !procState(jvm.pid()).equals("T"));
      // SIGTERM to a paused process still ends it (terminate continues it)
      jvm.pause();
      assertThat(jvm.terminate(Duration.ofSeconds(30))).isEqualTo(143);
    }
  }

  @Test
  void theTestKitFolderOverrideIsPassedOnToChildren(@TempDir Path dir) {
    String folder = dir.resolve("kit").toString();
    try (ChildJvm child =
        ChildJvm.builder(TestMains.TestkitDirReporter.class)
            .systemProperty("postbox.testkit.dir", folder)
            .start()) {
      assertThat(child.awaitLogLine("child dir=", READY)).isEqualTo("child dir=" + folder);
      // the child set nothing for its own child: the override travels by itself
      assertThat(child.awaitLogLine("grandchild dir=", READY))
          .isEqualTo("grandchild dir=" + folder);
    }
  }

  @Test
  void exitCodesAndFailedWaits() {
    ChildJvm exiter = ChildJvm.builder(TestMains.Exiter.class).args("3").start();
    assertThat(exiter.waitFor(READY)).contains(3);
    assertThatThrownBy(() -> exiter.awaitLogLine("never printed", READY))
        .isInstanceOf(ChildJvmExitedException.class)
        .hasMessageContaining("exited with code 3")
        .hasMessageContaining("exiting with 3")
        .satisfies(e -> assertThat(((ChildJvmExitedException) e).exitCode()).isEqualTo(3));
    // a line written before the exit is still found
    assertThat(exiter.awaitLogLine("exiting with", READY)).isEqualTo("exiting with 3");

    try (ChildJvm sleeper = ChildJvm.builder(TestMains.Sleeper.class).start()) {
      sleeper.awaitLogLine("sleeper ready", READY);
      assertThatThrownBy(() -> sleeper.awaitLogLine("never printed", Duration.ofMillis(100)))
          .isInstanceOf(LogLineTimeoutException.class)
          .hasMessageContaining("sleeper ready");
      assertThat(sleeper.waitFor(Duration.ZERO)).isEmpty();
      assertThatThrownBy(sleeper::start).isInstanceOf(IllegalStateException.class);
    }
    assertThatThrownBy(() -> ChildJvm.builder("x.Y").build().pid())
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aClassPathTooLongForOneArgumentGoesThroughAnArgFile() {
    StringBuilder cp = new StringBuilder(System.getProperty("java.class.path"));
    while (cp.length() < 200_000) {
      cp.append(":/nonexistent/padding/entry-").append(cp.length()).append(".jar");
    }
    ChildJvm exiter =
        ChildJvm.builder(TestMains.Exiter.class).classPath(cp.toString()).args("0").start();
    assertThat(exiter.waitFor(READY)).contains(0);
    assertThat(exiter.command()).anyMatch(arg -> arg.startsWith("@"));
  }

  @Test
  void childDiesWhenItsParentIsKilledWithMinus9() {
    try (ChildJvm parent = ChildJvm.builder(TestMains.Parent.class).start()) {
      String line = parent.awaitLogLine("grandchild pid=", READY);
      long grandchild = Long.parseLong(line.substring(line.indexOf('=') + 1));
      Optional<ProcessHandle> handle = ProcessHandle.of(grandchild);
      assertThat(handle).isPresent();

      parent.kill(); // no shutdown hooks run in the parent

      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> ProcessHandle.of(grandchild).map(h -> !h.isAlive()).orElse(true));
    }
  }

  /** The state letter of /proc/<pid>/stat: T when stopped. */
  private static String procState(long pid) throws Exception {
    String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
    return stat.substring(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  }
}
