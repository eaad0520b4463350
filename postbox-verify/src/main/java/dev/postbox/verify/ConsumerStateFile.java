package dev.postbox.verify;

import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.kafka.SubscriberState;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;

/**
 * A consumer process's {@link SubscriberState}, rewritten every second into a file the harness
 * reads when a drain exceeds its bound (the system property {@value #PROPERTY} names the file;
 * none: nothing is written).
 */
final class ConsumerStateFile {

  static final String PROPERTY = "verify.state";

  private ConsumerStateFile() {}

  /** Starts writing {@code subscriber}'s state for {@code instance}, if the property is set. */
  static void start(KafkaSubscriber subscriber, String instance) {
    String file = System.getProperty(PROPERTY, "");
    if (file.isEmpty()) {
      return;
    }
    Path path = Path.of(file);
    Thread.ofPlatform()
        .daemon(true)
        .name("state-file")
        .start(() -> {
          while (true) {
            write(path, instance + " at " + Instant.now() + ": " + describe(subscriber.state()));
            try {
              Thread.sleep(1_000);
            } catch (InterruptedException e) {
              return;
            }
          }
        });
  }

  static String describe(SubscriberState s) {
    return "running="
        + s.running()
        + " alive="
        + s.alive()
        + s.failure().map(f -> " failure=" + f).orElse("")
        + " fenced="
        + s.fenced()
        + " lastPoll="
        + s.lastPoll().map(Instant::toString).orElse("never")
        + " inFlight="
        + s.inFlight()
        + " assignment="
        + s.assignment().stream().map(tp -> tp.partition()).sorted().toList();
  }

  private static void write(Path path, String line) {
    try {
      Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
      Files.writeString(tmp, line + System.lineSeparator());
      Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      // diagnostics only: try again in a second
    }
  }
}
