package dev.postbox.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.time.FakeTime;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Bulk replays as background jobs against PostgreSQL: creation checks, progress and pacing on fake
 * time, pause, resume and cancel, a restarted runner carrying on, two runners never replaying a
 * letter twice, letters replayed or discarded meanwhile skipped, and the audit rows.
 */
@PostboxTest
class ReplayJobsIT {

  private static final Instant T0 = Instant.parse("2026-12-05T10:00:00Z");
  private static final Duration POLL = Duration.ofSeconds(1);

  private DataSource ds;
  private DeadLetterStore store;
  private FakeTime time;
  private PostboxAdmin admin;

  @BeforeEach
  void setUp(PostboxTestContext ctx) {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    store = PostgresDeadLetterStore.create(ds);
    time = FakeTime.startingAt(T0);
    admin = newAdmin();
  }

  /** An API as a console (re)started on the same database would build it. */
  private PostboxAdmin newAdmin() {
    return PostboxAdmin.builder(ds)
        .decoder(AdminFixtures.DECODER)
        .clock(time.clock())
        .sleeper(time)
        .ratePerSecond(10)
        .replayJobConfirmAbove(5)
        .replayJobMaxLetters(50)
        .build();
  }

  private List<Long> letters(String consumer, String topic, int n) {
    List<Long> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ids.add(
          store.add(
              AdminFixtures.letter(
                  consumer,
                  topic,
                  "k" + i,
                  "com.x.Boom",
                  null,
                  T0.minusSeconds(3600L - 60L * i),
                  "{\"n\":" + i + "}")));
    }
    return ids;
  }

  private static ReplaySelection group(String topic) {
    return ReplaySelection.matching(
        DeadLetterFilter.builder().fingerprint("com.x.Boom|bad order|" + topic).build());
  }

  private ReplayJob job(long id) {
    return admin.replayJob(id).orElseThrow();
  }

  @Test
  void thePreviewShowsWhatAJobWouldCoverAndCreationIsChecked() {
    List<Long> ids = letters("billing", "orders", 4);
    letters("shipping", "orders", 3);
    admin.as("bob").discard(ids.get(0), "not needed");

    ReplayPreview p = admin.previewReplay(group("orders"));
    assertThat(p.count()).isEqualTo(6);
    assertThat(p.topics()).containsExactly("orders");
    assertThat(p.consumers()).containsExactly("billing", "shipping");
    assertThat(p.oldest()).contains(T0.minusSeconds(3600)); // shipping's first
    assertThat(p.newest()).contains(T0.minusSeconds(3600 - 180)); // billing's last
    assertThat(p.sample()).hasSize(5).allMatch(d -> d.status() == DeadLetterStore.Status.PENDING);
    assertThat(p.confirmationNeeded()).isTrue();
    assertThat(p.confirmation()).isEqualTo("6");
    assertThat(admin.previewReplay(ReplaySelection.letter(ids.get(1))).confirmationNeeded())
        .isFalse();
    assertThat(admin.previewReplay(ReplaySelection.letter(ids.get(0))).count()).isZero();

    OperatorActions alice = admin.as("alice");
    assertThatThrownBy(() -> alice.startReplayJob(group("orders"), " ", Optional.of("6")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("reason");
    assertThatThrownBy(() -> alice.startReplayJob(group("orders"), "fixed", Optional.empty()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("typing their count, 6");
    assertThatThrownBy(() -> alice.startReplayJob(group("orders"), "fixed", Optional.of("5")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("covers 6 letters now, not 5");
    assertThatThrownBy(
            () -> alice.startReplayJob(ReplaySelection.letter(ids.get(0)), "x", Optional.empty()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no PENDING dead letter");
    letters("billing", "payments", 51);
    assertThatThrownBy(() -> alice.startReplayJob(group("payments"), "fixed", Optional.of("51")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("more than 50 letters");
    assertThat(admin.replayJobs(PageRequest.first(10)).items()).isEmpty();

    ReplayJob j = alice.startReplayJob(group("orders"), "consumer fixed", Optional.of(" 6 "));
    assertThat(j.state()).isEqualTo(ReplayJob.State.RUNNING);
    assertThat(j.total()).isEqualTo(6);
    assertThat(j.processed()).isZero();
    assertThat(j.createdBy()).isEqualTo("alice");
    assertThat(j.createdAt()).isEqualTo(T0);
    assertThat(j.selection()).isEqualTo("pending letters group=com.x.Boom|bad order|orders");
    List<AuditEntry> audit =
        admin
            .audit(
                new AuditFilter(
                    Optional.empty(),
                    Optional.of("REPLAY_JOB"),
                    Optional.empty(),
                    Optional.empty(),
                    Optional.empty(),
                    Optional.empty()),
                PageRequest.first(10))
            .items();
    assertThat(audit)
        .singleElement()
        .satisfies(a -> {
          assertThat(a.actor()).isEqualTo("alice");
          assertThat(a.howMany()).isEqualTo(6);
          assertThat(a.reason()).contains("consumer fixed");
          assertThat(a.what()).startsWith("replay job " + j.id() + ": pending letters group=");
        });
  }

  @Test
  void aRunnerWorksAJobLetterByLetterAtTheRateWithProgressAndOneAuditRowEach() {
    letters("billing", "orders", 5);
    long id = admin.as("alice").startReplayJob(group("orders"), "fixed", Optional.empty()).id();
    ReplayJobRunner runner = admin.replayJobRunner("console-a", POLL);

    assertThat(runner.step()).isTrue();
    assertThat(runner.step()).isTrue();
    ReplayJob half = job(id);
    assertThat(half.replayed()).isEqualTo(2);
    assertThat(half.processed()).isEqualTo(2);
    assertThat(half.owner()).contains("console-a");
    assertThat(half.percent()).isEqualTo(40);
    assertThat(runner.runUntilIdle()).isEqualTo(4); // 3 letters, then the step that finds none

    ReplayJob done = job(id);
    assertThat(done.state()).isEqualTo(ReplayJob.State.DONE);
    assertThat(done.replayed()).isEqualTo(5);
    assertThat(done.owner()).isEmpty();
    // the replayer's rate (10/s) spaced the writes on fake time: 4 waits of 100 ms, no real sleep
    assertThat(time.sleeps())
        .containsExactly(
            Duration.ofMillis(100),
            Duration.ofMillis(100),
            Duration.ofMillis(100),
            Duration.ofMillis(100));
    assertThat(done.startedAt()).contains(T0);
    assertThat(done.finishedAt()).contains(T0.plusMillis(400));
    assertThat(done.ratePerSecond()).hasValueSatisfying(r -> assertThat(r).isEqualTo(12.5));
    assertThat(replayCounts()).containsOnly(1);
    assertThat(auditRows("REPLAY", "alice")).isEqualTo(5);
    assertThat(auditRows("REPLAY_JOB", "alice")).isEqualTo(1);
    assertThat(runner.step()).isFalse();
  }

  @Test
  void pauseStopsTheRunnerResumeCarriesOnAndCancelEndsTheJob() {
    List<Long> ids = letters("billing", "orders", 5);
    OperatorActions alice = admin.as("alice");
    long id = alice.startReplayJob(group("orders"), "fixed", Optional.empty()).id();
    ReplayJobRunner runner = admin.replayJobRunner("console-a", POLL);
    runner.step();

    ReplayJob paused = admin.as("carol").pauseReplayJob(id);
    assertThat(paused.state()).isEqualTo(ReplayJob.State.PAUSED);
    assertThat(paused.changedBy()).contains("carol");
    assertThat(runner.step()).as("the job is not its own any more").isFalse();
    assertThat(job(id).processed()).isEqualTo(1);
    assertThatThrownBy(() -> alice.pauseReplayJob(id))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("is PAUSED, not RUNNING");

    alice.resumeReplayJob(id);
    assertThat(runner.step()).isTrue();
    assertThat(job(id).processed()).isEqualTo(2);

    ReplayJob cancelled = alice.cancelReplayJob(id);
    assertThat(cancelled.state()).isEqualTo(ReplayJob.State.CANCELLED);
    assertThat(cancelled.finishedAt()).isPresent();
    assertThat(runner.runUntilIdle()).as("it finds the job cancelled").isZero();
    assertThat(job(id).processed()).isEqualTo(2);
    assertThat(store.find(ids.get(2)).orElseThrow().status())
        .isEqualTo(DeadLetterStore.Status.PENDING);
    assertThatThrownBy(() -> alice.resumeReplayJob(id)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> alice.cancelReplayJob(id)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> alice.cancelReplayJob(id + 100))
        .isInstanceOf(java.util.NoSuchElementException.class);
  }

  @Test
  void aRestartedConsoleTakesTheJobOverOnceTheLeaseEndsAndTheOldRunnerStops() {
    letters("billing", "orders", 8);
    long id = admin.as("alice").startReplayJob(group("orders"), "fixed", Optional.of("8")).id();
    ReplayJobRunner before = admin.replayJobRunner("console-a", POLL);
    for (int i = 0; i < 3; i++) {
      before.step();
    }
    // console-a stops without a word; a new console starts on the same database
    ReplayJobRunner after = newAdmin().replayJobRunner("console-b", POLL);
    assertThat(after.step()).as("the lease of console-a still holds").isFalse();
    time.advance(PostboxAdmin.DEFAULT_REPLAY_JOB_LEASE.plusSeconds(1));
    assertThat(after.step()).isTrue();
    assertThat(job(id).owner()).contains("console-b");

    // console-a was only slow: it finds the job taken over and replays nothing more
    assertThat(before.step()).isFalse();
    assertThat(job(id).processed()).isEqualTo(4);

    after.runUntilIdle();
    ReplayJob done = job(id);
    assertThat(done.state()).isEqualTo(ReplayJob.State.DONE);
    assertThat(done.replayed()).isEqualTo(8);
    assertThat(replayCounts()).hasSize(8).containsOnly(1);
    assertThat(auditRows("REPLAY", "alice")).isEqualTo(8);
  }

  @Test
  void twoRunnersAtOnceNeverReplayALetterTwice() throws Exception {
    letters("billing", "orders", 20);
    letters("billing", "payments", 20);
    OperatorActions alice = admin.as("alice");
    long a = alice.startReplayJob(group("orders"), "fixed", Optional.of("20")).id();
    long b = alice.startReplayJob(group("payments"), "fixed", Optional.of("20")).id();
    List<ReplayJobRunner> runners =
        List.of(
            admin.replayJobRunner("console-a", POLL),
            newAdmin().replayJobRunner("console-b", POLL));
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<Integer>> steps = new ArrayList<>();
      for (ReplayJobRunner r : runners) {
        steps.add(pool.submit(r::runUntilIdle));
      }
      for (Future<Integer> f : steps) {
        f.get(5, TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
    // a runner that found nothing free stopped early: whatever is left, either finishes it
    runners.getFirst().runUntilIdle();
    assertThat(job(a).state()).isEqualTo(ReplayJob.State.DONE);
    assertThat(job(b).state()).isEqualTo(ReplayJob.State.DONE);
    assertThat(job(a).replayed() + job(b).replayed()).isEqualTo(40);
    assertThat(replayCounts()).hasSize(40).containsOnly(1);
    assertThat(auditRows("REPLAY", "alice")).isEqualTo(40);
    assertThat(outboxRows()).isEqualTo(40);
  }

  @Test
  void lettersReplayedOrDiscardedMeanwhileAreSkippedAndCounted() {
    List<Long> ids = letters("billing", "orders", 4);
    long id = admin.as("alice").startReplayJob(group("orders"), "fixed", Optional.empty()).id();
    admin.as("bob").replay(ids.get(1));
    admin.as("bob").discard(ids.get(2), "cancelled by hand");

    admin.replayJobRunner("console-a", POLL).runUntilIdle();
    ReplayJob done = job(id);
    assertThat(done.state()).isEqualTo(ReplayJob.State.DONE);
    assertThat(done.replayed()).isEqualTo(2);
    assertThat(done.skipped()).isEqualTo(2);
    assertThat(done.failed()).isZero();
    assertThat(replayCounts()).containsOnly(1, 0); // the discarded one was never replayed
    assertThat(auditRows("REPLAY", "alice")).isEqualTo(2);
    assertThat(auditRows("REPLAY", "bob")).isEqualTo(1);
    assertThat(outboxRows()).isEqualTo(3);
  }

  @Test
  void aBackgroundRunnerFinishesAJobAndStopsOnClose() {
    letters("billing", "orders", 3);
    long id = admin.as("alice").startReplayJob(group("orders"), "fixed", Optional.empty()).id();
    // the system clock and sleeper: the runner's thread waits between polls for real
    PostboxAdmin real =
        PostboxAdmin.builder(ds).decoder(AdminFixtures.DECODER).ratePerSecond(100).build();
    try (ReplayJobRunner runner =
        real.replayJobRunner("console-a", Duration.ofMillis(50)).start()) {
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofMinutes(2))
          .until(() -> job(id).state() == ReplayJob.State.DONE);
    }
    assertThat(job(id).replayed()).isEqualTo(3);
  }

  private List<Integer> replayCounts() {
    return ints("SELECT replays FROM postbox_dead_letter ORDER BY id");
  }

  private int auditRows(String action, String actor) {
    return ints("SELECT count(*) FROM postbox_replay_audit WHERE action = '"
            + action
            + "' AND by_whom = '"
            + actor
            + "'")
        .getFirst();
  }

  private int outboxRows() {
    return ints("SELECT count(*) FROM postbox_outbox").getFirst();
  }

  private List<Integer> ints(String sql) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      List<Integer> out = new ArrayList<>();
      while (rs.next()) {
        out.add(rs.getInt(1));
      }
      return out;
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
