package dev.postbox.spring;

import java.util.Arrays;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Chooses the transaction manager of the effectively-once listeners' transactions: the bean named
 * by {@code postbox.consumers.transaction-manager}, else the application's only (or primary) {@link
 * PlatformTransactionManager}, else, when the application has none, a {@link
 * JdbcTransactionManager} on its {@code DataSource}. Several without a primary one, and no name,
 * are refused at start-up.
 */
final class ListenerTransactionManager {

  private ListenerTransactionManager() {}

  static PlatformTransactionManager choose(
      PostboxProperties properties, ListableBeanFactory beans, DataSource dataSource) {
    String name = properties.getConsumers().getTransactionManager();
    if (!name.isBlank()) {
      try {
        return beans.getBean(name, PlatformTransactionManager.class);
      } catch (NoSuchBeanDefinitionException e) {
        throw new PostboxConfigurationException(
            List.of(
                "postbox.consumers.transaction-manager: no PlatformTransactionManager bean named '"
                    + name
                    + "'"));
      }
    }
    String[] names = beans.getBeanNamesForType(PlatformTransactionManager.class);
    if (names.length == 0) {
      return new JdbcTransactionManager(dataSource);
    }
    return beans
        .getBeanProvider(PlatformTransactionManager.class)
        .getIfUnique(() -> {
          throw new PostboxConfigurationException(
              List.of(
                  "postbox.consumers.transaction-manager: the application has several"
                      + " transaction managers "
                      + Arrays.toString(names)
                      + " and none is primary; name the one of the listeners' DataSource"));
        });
  }
}
