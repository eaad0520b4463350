package dev.postbox.testkit;

/**
 * Thrown when the Kafka broker's class path cannot be assembled: the {@code postbox-testkit-broker}
 * jar is not on the class path, or a jar it names is not in the local Maven repository. The message
 * says which jar is missing and how to fetch it.
 */
public final class BrokerClassPathException extends RuntimeException {

  public BrokerClassPathException(String message) {
    super(message);
  }
}
