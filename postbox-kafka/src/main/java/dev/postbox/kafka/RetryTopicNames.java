package dev.postbox.kafka;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The names of one subscription's retry and dead-letter topics, {@code
 * <topic>.<subscription>.retry.<tier>} and {@code <topic>.<subscription>.dlt}, and which topic and
 * tier a retry topic stands for.
 *
 * <p><b>Why the subscription is in the name.</b> Every consumer group reads the whole topic, so a
 * retry topic shared by the groups of one topic ({@code <topic>.retry.<tier>}, the earlier naming)
 * was read by each group's retry consumer: a record one group failed was applied again in every
 * other group, where it had already succeeded, and retried there by the wrong handler. A retry
 * topic holds one group's failures, so it belongs to that group, as a dead-letter replay is
 * addressed to one consumer ({@code ReplayHeaders}). Spring Kafka reaches the same place by
 * requiring a different retry and DLT suffix per listener when several listeners share a topic
 * ("Multiple Listeners, Same Topic(s)"); here it is the default, since a subscription name is
 * already unique per consumer group. The topic comes first so that a topic's retry topics sort
 * beside it.
 *
 * <p>The topic and tier of a retry topic come from the names this subscription built, never from
 * parsing a name: with dots allowed in topic and subscription names a name alone can be read more
 * than one way.
 *
 * <p>Legal names are checked here by hand ({@code [a-zA-Z0-9._-]}, at most 249 characters, Kafka's
 * documented rule) because kafka-clients exposes its own check only in an internal package.
 */
final class RetryTopicNames {

  /** Kafka's longest topic name. */
  static final int MAX_TOPIC_LENGTH = 249;

  private static final Pattern LEGAL = Pattern.compile("[a-zA-Z0-9._-]+");

  /** Which topic and tier a retry topic stands for; {@code legacy}: the earlier shared naming. */
  record Source(String topic, int tier, boolean legacy) {}

  private RetryTopicNames() {}

  /** The retry topic of {@code subscription} for {@code topic}'s tier {@code tier} (from 1). */
  static String retryTopic(String topic, String subscription, int tier) {
    return topic + "." + subscription + ".retry." + tier;
  }

  /** The dead-letter topic of {@code subscription} for {@code topic}. */
  static String deadLetterTopic(String topic, String subscription) {
    return topic + "." + subscription + ".dlt";
  }

  /** The earlier shared retry topic, {@code <topic>.retry.<tier>}, read to drain it on upgrade. */
  static String legacyRetryTopic(String topic, int tier) {
    return topic + ".retry." + tier;
  }

  /**
   * This subscription's retry topics: name → topic and tier, for {@code tiers} tiers of each topic.
   */
  static Map<String, Source> retryTopics(
      Collection<String> topics, String subscription, int tiers) {
    Map<String, Source> out = new HashMap<>();
    for (String t : topics) {
      for (int i = 1; i <= tiers; i++) {
        out.put(retryTopic(t, subscription, i), new Source(t, i, false));
      }
    }
    return out;
  }

  /**
   * Which of {@code existing} are earlier shared retry topics of {@code topics}: any tier, read as
   * the last of {@code tiers} when past it (then a failure goes to the dead-letter topic). A name
   * that is also one of {@code own} (a subscription reading both {@code a} and {@code a.<itself>})
   * is its own.
   */
  static Map<String, Source> legacyRetryTopics(
      Collection<String> topics, Collection<String> existing, int tiers, Set<String> own) {
    Map<String, Source> out = new HashMap<>();
    for (String t : topics) {
      Pattern legacy = Pattern.compile(Pattern.quote(t) + "\\.retry\\.([1-9][0-9]{0,8})");
      for (String name : existing) {
        Matcher m = legacy.matcher(name);
        if (m.matches() && !own.contains(name)) {
          out.put(name, new Source(t, Math.min(Integer.parseInt(m.group(1)), tiers), true));
        }
      }
    }
    return out;
  }

  /**
   * Why {@code subscription}'s retry topics for {@code topics} cannot be named, if so: the
   * subscription name has a character Kafka refuses in a topic name, or a name would be longer than
   * {@value #MAX_TOPIC_LENGTH}.
   */
  static Optional<String> problem(String subscription, List<String> topics, int tiers) {
    if (!LEGAL.matcher(subscription).matches()) {
      return Optional.of(
          "retryTopics names topics '<topic>."
              + subscription
              + ".retry.<n>' and '<topic>."
              + subscription
              + ".dlt', but the subscription name has characters Kafka refuses in a topic name"
              + " (allowed: ASCII letters, digits, '.', '_', '-'); rename the subscription or use"
              + " parking");
    }
    for (String t : topics) {
      String longest = retryTopic(t, subscription, tiers);
      if (longest.length() > MAX_TOPIC_LENGTH) {
        return Optional.of(
            "retryTopics would name the topic '"
                + longest
                + "' ("
                + longest.length()
                + " characters), longer than Kafka's "
                + MAX_TOPIC_LENGTH
                + "; shorten the subscription or topic name");
      }
    }
    return Optional.empty();
  }
}
