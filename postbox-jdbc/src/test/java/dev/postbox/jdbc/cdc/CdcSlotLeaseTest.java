package dev.postbox.jdbc.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The slot lease: an owner paused past its lease (its database calls and its publishing thread
 * stopped, its replication connection still open) is replaced by a standby, which ends the paused
 * owner's walsender and streams from the slot's confirmed position; once resumed, the ex-owner
 * sends no new batch, marks nothing and confirms nothing.
 */
@PostboxTest
class CdcSlotLeaseTest {

  private static final Duration ARRIVAL = Duration.ofSeconds(60);
  private static final Duration LEASE = Duration.ofSeconds(2);

  private final List<CdcRelay> relays = new ArrayList<>();
  private final Outbox outbox = Outbox.postgres();
  private PostboxTestContext ctx;
  private DataSource ds;

  @BeforeEach
  void migrate(PostboxTestContext ctx) {
    this.ctx = ctx;
    this.ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
  }

  @AfterEach
  void dropSlot() throws SQLException {
    relays.forEach(CdcRelay::close);
    if (!relays.isEmpty()) {
      CdcSlots.drop(ds, relays.get(0).slotName(), relays.get(0).publicationName());
    }
  }

  private CdcRelay relay(String id, DataSource source, GatedPublisher publisher) {
    CdcRelay r =
        CdcRelay.builder(source, ctx.jdbcUrl(), publisher)
            .instanceId(id)
            .batchSize(50)
            .leaseTtl(LEASE)
            .standbyRetryInterval(Duration.ofMillis(100))
            .backoff(new Backoff(Duration.ofMillis(20), Duration.ofMillis(200), 2, 0.5))
            .build();
    relays.add(r);
    r.start();
    return r;
  }

  private List<Message> write(int count, int from) {
    List<Message> all = new ArrayList<>();
    for (int n = from; n < from + count; n++) {
      Message m =
          Message.builder("orders", "order.created")
              .key("k" + (n % 3))
              .jsonPayload("{\"n\":" + n + "}")
              .build();
      outbox.inTransaction(
          ds,
          w -> {
            w.write(m);
            return null;
          });
      all.add(m);
    }
    return all;
  }

  @Test
  void anOwnerPausedPastItsLeaseIsReplacedAndOnceResumedPublishesMarksAndConfirmsNothing()
      throws Exception {
    PausableDataSource aSource = new PausableDataSource(ds);
    GatedPublisher a = new GatedPublisher();
    CdcRelay owner = relay("a", aSource, a);
    await().atMost(ARRIVAL).until(owner::active);
    long ownerEpoch = owner.leaseEpoch();
    assertThat(ownerEpoch).isPositive();
    write(20, 0);
    await().atMost(ARRIVAL).until(() -> owner.stats().marked() == 20);

    // pause the owner: its database calls (lease renewal, marks) and its publishing thread stop
    aSource.paused(true);
    a.close(true);
    List<Message> during = write(30, 20);
    await().atMost(ARRIVAL).until(a::waiting); // a batch of the 30 is handed over, held at the gate

    GatedPublisher b = new GatedPublisher();
    CdcRelay successor = relay("b", ds, b);
    await().atMost(ARRIVAL).until(() -> b.acknowledged().containsAll(during));
    assertThat(successor.active()).isTrue();
    assertThat(successor.leaseEpoch()).isGreaterThan(ownerEpoch);
    // in commit order from the slot's confirmed position: the tail is exactly the 30, in order
    List<Message> got = b.acknowledged();
    assertThat(got.subList(got.size() - 30, got.size())).containsExactlyElementsOf(during);

    int callsBeforeResume = a.calls();
    long markedBeforeResume = owner.stats().marked();
    String confirmedBeforeResume = owner.confirmedLsn();

    // resume the owner
    aSource.paused(false);
    a.close(false);
    List<Message> after = write(10, 50);
    await().atMost(ARRIVAL).until(() -> b.acknowledged().containsAll(after));
    // every row the ex-owner streamed (in flight or queued) is dropped unsettled
    await().atMost(ARRIVAL).until(() -> owner.stats().dropped() >= 30);
    await().atMost(ARRIVAL).until(() -> owner.leaseEpoch() == 0);

    assertThat(a.calls())
        .as("publish calls of the ex-owner after it resumed")
        .isEqualTo(callsBeforeResume);
    assertThat(owner.stats().marked()).isEqualTo(markedBeforeResume);
    assertThat(owner.confirmedLsn()).isEqualTo(confirmedBeforeResume);
    assertThat(owner.active()).isFalse();
    assertThat(successor.active()).isTrue();
    assertThat(leaseOwner(successor.slotName())).isEqualTo("b");
    // the successor marks everything: nothing left pending
    await().atMost(ARRIVAL).until(() -> pending() == 0);
  }

  private String leaseOwner(String slot) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT owner FROM postbox_cdc_slot WHERE slot_name = ?")) {
      ps.setString(1, slot);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    }
  }

  private long pending() throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM postbox_outbox WHERE published_at IS NULL"
                    + " AND failed_at IS NULL");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
