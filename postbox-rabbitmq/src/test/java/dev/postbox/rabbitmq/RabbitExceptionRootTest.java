package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.PostboxException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * One exception root for this module too: its public exceptions are {@link PostboxException}s
 * (postbox-kafka's {@code ExceptionRootTest} cannot see this module: adapters never depend on each
 * other).
 */
class RabbitExceptionRootTest {

  @Test
  void everyPublicExceptionIsAPostboxException() {
    List<Class<? extends Throwable>> exceptions =
        List.of(
            RabbitTopologyException.class,
            RabbitUnroutableException.class,
            RabbitStartupException.class);
    assertThat(exceptions).allMatch(PostboxException.class::isAssignableFrom);
  }
}
