package dev.postbox.testkit;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/** Tiny main classes that ChildJvmTest runs in child JVMs. */
final class TestMains {

  private TestMains() {}

  /** Prints a ready line, then waits forever; prints "bye" from a shutdown hook on SIGTERM. */
  static final class Sleeper {
    public static void main(String[] args) throws InterruptedException {
      Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("bye")));
      System.out.println("sleeper ready pid=" + ProcessHandle.current().pid());
      System.err.println(
          "on stderr: " + String.join(",", args) + " " + System.getProperty("greeting"));
      new CountDownLatch(1).await();
    }
  }

  /** Hits the crash point named by the first argument once, then prints "passed" and exits 0. */
  static final class CrashPointHitter {
    public static void main(String[] args) {
      dev.postbox.core.CrashPoints.hit(args[0]);
      System.out.println("passed");
      System.exit(0);
    }
  }

  /** Exits with the code given as the first argument. */
  static final class Exiter {
    public static void main(String[] args) {
      System.out.println("exiting with " + args[0]);
      System.exit(Integer.parseInt(args[0]));
    }
  }

  /** Starts a Sleeper grandchild, prints its pid, then waits forever. */
  static final class Parent {
    public static void main(String[] args) throws InterruptedException {
      ChildJvm child = ChildJvm.builder(Sleeper.class).start();
      child.awaitLogLine("sleeper ready", Duration.ofSeconds(60));
      System.out.println("grandchild pid=" + child.pid());
      new CountDownLatch(1).await();
    }
  }

  /** Prints its own test kit folder property, then that of a grandchild it starts plainly. */
  static final class TestkitDirReporter {
    public static void main(String[] args) throws InterruptedException {
      if (args.length > 0) {
        System.out.println("grandchild dir=" + System.getProperty("postbox.testkit.dir"));
        return;
      }
      System.out.println("child dir=" + System.getProperty("postbox.testkit.dir"));
      try (ChildJvm grandchild = ChildJvm.builder(TestkitDirReporter.class).args("g").start()) {
        System.out.println(grandchild.awaitLogLine("grandchild dir=", Duration.ofSeconds(60)));
      }
    }
  }
}
