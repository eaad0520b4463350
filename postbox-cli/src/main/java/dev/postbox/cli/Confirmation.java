package dev.postbox.cli;

import java.io.Console;
import java.util.Locale;
import picocli.CommandLine.Option;

/**
 * {@code --yes} for the destructive commands; without it they ask on the terminal, and refuse when
 * there is none (scripts must say {@code --yes}).
 */
final class Confirmation {

  @Option(
      names = {"-y", "--yes"},
      description = "Do it without asking.")
  boolean yes;

  /** Whether to go ahead with {@code what}. */
  boolean confirmed(String what) {
    if (yes) {
      return true;
    }
    Console console = System.console();
    if (console == null) {
      System.err.println(
          "postbox: not confirmed: " + what + " (no terminal to ask on; add --yes to go ahead)");
      return false;
    }
    String answer = console.readLine("%s? Type yes to go ahead: ", what);
    boolean ok = answer != null && answer.trim().toLowerCase(Locale.ROOT).equals("yes");
    if (!ok) {
      System.err.println("postbox: not confirmed; nothing done");
    }
    return ok;
  }
}
