package dev.postbox.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import dev.postbox.core.CrashPoints;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Crash-point names live in one place, {@link CrashPoints}: every name in the main code of any
 * module (the production calls to {@code CrashPoints.hit}, the harnesses that arm them, the demo)
 * must be one of {@link CrashPoints#ALL}, so a typo or a new point that is not listed fails here
 * instead of silently never firing. Names are read from the class files' constant pools (the
 * compiler copies a {@code static final String} into each class that uses it, so bytecode alone
 * cannot tell a literal from a constant; the list is what is enforced).
 */
class CrashPointNamesTest {

  /**
   * {@code relay.after-claim}, {@code consumer.during-rebalance@1}: a role, a dot, hyphenated
   * words.
   */
  static final Pattern NAME =
      Pattern.compile(
          "(?<![A-Za-z0-9._-])(?:outbox|relay|consumer|cdc|requester)\\.[a-z]+(?:-[a-z]+)+");

  @Test
  void everyCrashPointNameInTheMainCodeIsListedInCrashPoints() {
    Map<String, Set<String>> unknown = new TreeMap<>();
    int seen = 0;
    for (JavaClass c : Modules.allMainClasses()) {
      for (String name : namesIn(c)) {
        seen++;
        if (!CrashPoints.ALL.contains(name)) {
          unknown.computeIfAbsent(name, n -> new TreeSet<>()).add(c.getName());
        }
      }
    }
    assertThat(seen).as("crash-point names found in the main code").isGreaterThan(10);
    assertThat(unknown).as("crash-point names not in CrashPoints.ALL, and where").isEmpty();
  }

  @Test
  void theListHasNoDuplicatesAndEveryNameHasTheShapeTheScanLooksFor() {
    assertThat(CrashPoints.ALL).doesNotHaveDuplicates();
    assertThat(CrashPoints.ALL).allSatisfy(n -> assertThat(NAME.matcher(n).matches()).isTrue());
  }

  @Test
  void theScanFindsAMisspelledName() {
    assertThat(namesIn("x\u0001\u0000\u0016relay.after-ack-befor-mark@2y"))
        .containsExactly("relay.after-ack-befor-mark");
    assertThat(namesIn("postbox.relay.stuck-rows")).isEmpty(); // a metric, not a crash point
  }

  static Set<String> namesIn(JavaClass javaClass) {
    try (InputStream in = javaClass.getSource().orElseThrow().getUri().toURL().openStream()) {
      return namesIn(new String(in.readAllBytes(), StandardCharsets.ISO_8859_1));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static Set<String> namesIn(String latin1) {
    Set<String> found = new TreeSet<>();
    Matcher m = NAME.matcher(latin1);
    while (m.find()) {
      found.add(m.group());
    }
    return found;
  }
}
