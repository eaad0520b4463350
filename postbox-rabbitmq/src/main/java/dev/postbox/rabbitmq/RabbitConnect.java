package dev.postbox.rabbitmq;

import com.rabbitmq.client.AuthenticationFailureException;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.PossibleAuthenticationFailureException;

/** Explains a failed first connection as a {@link RabbitStartupException}. Stateless. */
final class RabbitConnect {

  private RabbitConnect() {}

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
