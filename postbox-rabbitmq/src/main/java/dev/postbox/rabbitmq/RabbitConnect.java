package dev.postbox.rabbitmq;

import com.rabbitmq.client.Address;
import com.rabbitmq.client.AddressResolver;
import com.rabbitmq.client.AuthenticationFailureException;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.ListAddressResolver;
import com.rabbitmq.client.PossibleAuthenticationFailureException;
import java.io.IOException;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLContext;

/**
 * Where and how the builders' connections go (the brokers' addresses, TLS), and explains a failed
 * first connection as a {@link RabbitStartupException}. Stateless.
 */
final class RabbitConnect {

  private RabbitConnect() {}

  /**
   * {@code hostPorts} ({@code host} or {@code host:port}; no port: the protocol's, 5672 or 5671
   * with TLS) parsed by the client's {@link Address#parseAddress}.
   *
   * @throws IllegalArgumentException if the list is empty or an entry is blank
   */
  static List<Address> addresses(List<String> hostPorts) {
    Objects.requireNonNull(hostPorts, "hostPorts");
    if (hostPorts.isEmpty()) {
      throw new IllegalArgumentException("addresses: at least one host[:port]");
    }
    return hostPorts.stream()
        .map(a -> {
          if (a == null || a.isBlank()) {
            throw new IllegalArgumentException("addresses: a blank entry in " + hostPorts);
          }
          return Address.parseAddress(a.strip());
        })
        .toList();
  }

  /** TLS on {@code factory} with {@code context}, verifying the broker's host name. */
  static void useTls(ConnectionFactory factory, SSLContext context) {
    factory.useSslProtocol(Objects.requireNonNull(context, "sslContext"));
    factory.enableHostnameVerification();
  }

  /**
   * A connection to the first of {@code addresses} that answers, in the order given (the client
   * would shuffle them), or to the URI's host if there are none.
   */
  static Connection open(ConnectionFactory factory, List<Address> addresses, String name)
      throws IOException, TimeoutException {
    return addresses.isEmpty()
        ? factory.newConnection(name)
        : factory.newConnection(null, inOrder(addresses), name); // null: the factory's executor
  }

  /** {@code addresses} as the client's resolver, without its shuffle. */
  static AddressResolver inOrder(List<Address> addresses) {
    return new ListAddressResolver(addresses) {
      @Override
      public List<Address> maybeShuffle(List<Address> input) {
        return input;
      }
    };
  }

  /** Why {@code who} could not connect through {@code factory}, from {@code e}. */
  static RabbitStartupException refused(String who, ConnectionFactory factory, Exception e) {
    String where =
        factory.getHost()
            + ":"
            + factory.getPort()
            + ", vhost '"
            + factory.getVirtualHost()
            + "', user '"
            + factory.getUsername()
            + "'";
    Integer code = RabbitTopology.replyCode(e);
    String why;
    if (hasCause(e, AuthenticationFailureException.class)
        || hasCause(e, PossibleAuthenticationFailureException.class)
        || (code != null && code == 403)) {
      why = "the broker refused the login: wrong user name or password";
    } else if (code != null && code == 530) {
      why = "the broker refused the vhost: it does not exist or the user may not use it";
    } else if (hasCause(e, java.net.ConnectException.class)) {
      why = "nothing answers at that address";
    } else {
      why = "cannot connect";
    }
    return new RabbitStartupException(
        who + ": RabbitMQ at " + where + ": " + why + " (" + e + ")", e);
  }

  private static boolean hasCause(Throwable e, Class<? extends Throwable> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return true;
      }
    }
    return false;
  }
}
