package dev.postbox.testkit.internal;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;

/**
 * Launcher of child JVMs that must not outlive the JVM that started them, even when that one is
 * killed with {@code kill -9} and its shutdown hooks never run.
 *
 * <p>The parent keeps the write end of the child's standard input open for as long as it lives; the
 * operating system closes it when the parent dies, however it dies. A daemon thread here reads
 * standard input and halts this JVM at end of file. Then it runs the real main class, named by the
 * first argument, with the remaining arguments.
 *
 * <p>This class is copied alone onto the child's class path (see {@link WatchdogClassPath}), so it
 * must use nothing but the JDK and must not have nested or anonymous classes.
 */
public final class ParentWatchdog {

  /** Exit code of a child halted because its parent died. */
  public static final int EXIT_CODE = 137;

  private ParentWatchdog() {}

  public static void main(String[] args) throws Throwable {
    if (args.length == 0) {
      System.err.println("usage: ParentWatchdog <main class> [args...]");
      System.exit(2);
    }
    Thread watchdog = new Thread(ParentWatchdog::watchStdin, "postbox-parent-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();

    Method main = Class.forName(args[0]).getMethod("main", String[].class);
    // Like the java launcher, run a public static main of a class that is not public.
    main.setAccessible(true);
    try {
      main.invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static void watchStdin() {
    InputStream in = System.in;
    byte[] buffer = new byte[256];
    try {
      while (in.read(buffer) >= 0) {
        // The parent never writes; anything read is ignored.
      }
    } catch (IOException e) {
      // A broken pipe means the same as end of file: the parent is gone.
    }
    System.err.println("postbox-testkit: parent process is gone (stdin closed); halting");
    System.err.flush();
    Runtime.getRuntime().halt(EXIT_CODE);
  }
}
