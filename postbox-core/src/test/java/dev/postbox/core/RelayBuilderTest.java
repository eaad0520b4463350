package dev.postbox.core;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayStore;
import java.lang.reflect.Proxy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RelayBuilderTest {

  private static <T> T unused(Class<T> type) {
    return type.cast(
        Proxy.newProxyInstance(
            type.getClassLoader(),
            new Class<?>[] {type},
            (p, m, a) -> {
              throw new AssertionError("not called at build time");
            }));
  }

  private final RelayStore store = unused(RelayStore.class);
  private final RelayPublisher publisher = unused(RelayPublisher.class);

  @Test
  void invalidSettingsFailAtBuild() {
    assertThatThrownBy(() -> Relay.builder(store, publisher).batchSize(0).build())
        .hasMessageContaining("batchSize");
    assertThatThrownBy(() -> Relay.builder(store, publisher).leaseTtl(Duration.ZERO).build())
        .hasMessageContaining("leaseTtl");
    assertThatThrownBy(() ->
            Relay.builder(store, publisher)
                .leaseTtl(Duration.ofSeconds(4))
                .heartbeatInterval(Duration.ofSeconds(3))
                .build())
        .hasMessageContaining("at most half");
    assertThatThrownBy(
            () -> Relay.builder(store, publisher).retention(Duration.ofSeconds(-1)).build())
        .hasMessageContaining("retention");
    assertThatThrownBy(() -> Relay.builder(store, publisher).instanceId(" ").build())
        .hasMessageContaining("instanceId");
    assertThatThrownBy(() -> Relay.builder(null, publisher))
        .isInstanceOf(NullPointerException.class);
  }
}
