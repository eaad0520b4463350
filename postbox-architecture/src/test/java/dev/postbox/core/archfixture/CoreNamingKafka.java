package dev.postbox.core.archfixture;

/** Names Kafka without depending on it: only a constant-pool scan sees this. */
public final class CoreNamingKafka {
  private CoreNamingKafka() {}

  public static boolean isKafkaError(Throwable t) {
    return t.getClass().getName().startsWith("org.apache.kafka.");
  }

  public static String system() {
    return "kafka";
  }
}
