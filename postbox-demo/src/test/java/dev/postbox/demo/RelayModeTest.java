package dev.postbox.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.jdbc.Outbox;
import org.junit.jupiter.api.Test;

/** The demo's {@code --relay} and {@code --outbox}: the three combinations and the refusals. */
class RelayModeTest {

  @Test
  void namesTheThreeCombinationsCaseInsensitively() {
    assertThat(RelayMode.of("polling", "table")).isEqualTo(RelayMode.POLLING_TABLE);
    assertThat(RelayMode.of("CDC", "table")).isEqualTo(RelayMode.CDC_TABLE);
    assertThat(RelayMode.of("cdc", "Emit")).isEqualTo(RelayMode.CDC_EMIT);
    assertThat(RelayMode.POLLING_TABLE.cdc()).isFalse();
    assertThat(RelayMode.CDC_EMIT.relay()).isEqualTo("cdc");
    assertThat(RelayMode.CDC_EMIT.outbox()).isEqualTo("emit");
  }

  @Test
  void onlyTheEmitModeWritesLogicalMessages() {
    assertThat(RelayMode.CDC_EMIT.ordersOutbox()).isInstanceOf(EmitOrderOutbox.class);
    assertThat(RelayMode.CDC_TABLE.ordersOutbox()).isNotInstanceOf(EmitOrderOutbox.class);
    assertThat(RelayMode.POLLING_TABLE.ordersOutbox()).isInstanceOf(Outbox.class);
  }

  @Test
  void refusesTheEmitOutboxWithThePollingRelayAndUnknownNames() {
    assertThatThrownBy(() -> RelayMode.of("polling", "emit"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--relay cdc");
    assertThatThrownBy(() -> RelayMode.of("debezium", "table"))
        .hasMessageContaining("unknown relay");
    assertThatThrownBy(() -> RelayMode.of("cdc", "kafka")).hasMessageContaining("unknown outbox");
  }
}
