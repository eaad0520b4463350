package dev.postbox.testkit;

import java.nio.file.Path;

/**
 * The TLS listener of a private RabbitMQ node started with {@link
 * RabbitMqServer#startPrivateWithTls}: a throwaway self-signed certificate naming {@code localhost}
 * and {@code 127.0.0.1}; the node's guest user over it.
 *
 * @param host where it listens (127.0.0.1)
 * @param port its port
 * @param trustStore a PKCS#12 trust store holding the node's certificate
 * @param trustStorePassword the trust store's password
 */
public record RabbitTlsListener(String host, int port, Path trustStore, String trustStorePassword) {

  @Override
  public String toString() {
    return "RabbitTlsListener[" + host + ":" + port + "]";
  }
}
