package dev.postbox.jdbc.cdc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class CommitTrackerTest {

  @Test
  void aTransactionIsConfirmedOnlyWhenItsLastRowIsDone() {
    CommitTracker t = new CommitTracker(10);
    t.received(100, 110, 3);
    t.received(200, 210, 2);
    assertThat(t.done(100, 0)).isEqualTo(10);
    assertThat(t.done(100, 1)).as("two of three rows under one commit LSN").isEqualTo(10);
    assertThat(t.done(100, 2)).isEqualTo(110);
    assertThat(t.done(200, 0)).isEqualTo(110);
    assertThat(t.done(200, 1)).isEqualTo(210);
    assertThat(t.pending()).isZero();
  }

  @Test
  void aBatchEndingInALaterTransactionCompletesTheEarlierOnes() {
    CommitTracker t = new CommitTracker(0);
    t.received(100, 110, 2);
    t.received(200, 210, 4);
    assertThat(t.done(200, 1)).isEqualTo(110);
    assertThat(t.pending()).isEqualTo(1);
  }

  @Test
  void transactionsWithoutOutboxRowsFollowWhatIsBeforeThem() {
    CommitTracker t = new CommitTracker(0);
    t.received(50, 60, 0);
    assertThat(t.confirmable()).isEqualTo(60);
    t.received(100, 110, 1);
    t.received(150, 160, 0);
    assertThat(t.confirmable()).as("behind an open transaction").isEqualTo(60);
    assertThat(t.done(100, 0)).isEqualTo(160);
  }

  @Test
  void theServerPositionIsConfirmedOnlyWhenNothingIsOpen() {
    CommitTracker t = new CommitTracker(0);
    t.received(100, 110, 1);
    assertThat(t.idle(500)).isEqualTo(0);
    t.done(100, 0);
    assertThat(t.idle(500)).isEqualTo(500);
    assertThat(t.idle(400)).as("never backwards").isEqualTo(500);
  }

  @Test
  void refusesTransactionsOutOfCommitOrder() {
    CommitTracker t = new CommitTracker(0);
    t.received(100, 110, 1);
    assertThatThrownBy(() -> t.received(90, 95, 1)).isInstanceOf(IllegalStateException.class);
  }
}
