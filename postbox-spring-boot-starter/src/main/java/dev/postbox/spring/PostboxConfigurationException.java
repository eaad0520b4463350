package dev.postbox.spring;

import dev.postbox.core.PostboxException;
import java.util.List;

/**
 * The {@code postbox.*} configuration was refused at start-up: the message lists every problem
 * found (unknown keys, values that do not convert, contradictions), one per line.
 */
public class PostboxConfigurationException extends PostboxException {

  private final List<String> problems;

  /** Refuses the configuration for {@code problems} (at least one). */
  public PostboxConfigurationException(List<String> problems) {
    super(describe(problems));
    this.problems = List.copyOf(problems);
  }

  /** Every problem found, in the order found. */
  public List<String> problems() {
    return problems;
  }

  private static String describe(List<String> problems) {
    StringBuilder b =
        new StringBuilder("the Postbox configuration (postbox.*) has ")
            .append(problems.size())
            .append(problems.size() == 1 ? " problem:" : " problems:");
    problems.forEach(p -> b.append(System.lineSeparator()).append("  - ").append(p));
    return b.toString();
  }
}
