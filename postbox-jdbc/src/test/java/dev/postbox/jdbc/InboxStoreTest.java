package dev.postbox.jdbc;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.spi.InboxStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.postgresql.util.PSQLException;

@PostboxTest
class InboxStoreTest {

  private static final String CONSUMER = "billing";

  private DataSource ds;
  private InboxStore store;
  private final ExecutorService pool = Executors.newFixedThreadPool(2);

  @BeforeEach
  void setUp(PostboxTestContext ctx) throws SQLException {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    store = PostgresInboxStore.create(ds);
    exec("CREATE TABLE effect (message_id uuid NOT NULL, note text NOT NULL)");
  }

  @AfterEach
  void tearDown() {
    pool.shutdownNow();
  }

  // ---------------------------------------------------------------- processOnce

  @Test
  void aDuplicateIsSuppressedPerConsumer() throws Exception {
    UUID id = UUID.randomUUID();
    AtomicInteger runs = new AtomicInteger();
    InboxStore.Work work =
        c -> {
          runs.incrementAndGet();
          insertEffect(c, id, "applied");
        };

    assertThat(store.processOnce(CONSUMER, id, work)).isTrue();
    assertThat(store.processOnce(CONSUMER, id, work)).as("duplicate").isFalse();
    assertThat(runs).as("work of the duplicate not run").hasValue(1);
    assertThat(effectNotes(id)).containsExactly("applied");

    assertThat(store.processOnce("shipping", id, work)).as("another consumer").isTrue();
    assertThat(runs).hasValue(2);
    assertThat(recorded(CONSUMER)).isEqualTo(1);
    assertThat(recorded("shipping")).isEqualTo(1);
  }

  @Test
  void failedWorkRecordsNothingAndARetryAppliesTheMessageOnce() throws Exception {
    UUID id = UUID.randomUUID();
    IllegalStateException boom = new IllegalStateException("handler failed");

    assertThatThrownBy(() ->
            store.processOnce(
                CONSUMER,
                id,
                c -> {
                  insertEffect(c, id, "first attempt");
                  throw boom;
                }))
        .isSameAs(boom);
    assertThat(recorded(CONSUMER)).as("dedupe record rolled back with the effect").isZero();
    assertThat(effectNotes(id)).isEmpty();

    assertThat(store.processOnce(CONSUMER, id, c -> insertEffect(c, id, "retry"))).isTrue();
    assertThat(store.processOnce(CONSUMER, id, c -> insertEffect(c, id, "again"))).isFalse();
    assertThat(effectNotes(id)).containsExactly("retry");
  }

  @Test
  void exceptionsOfTheWorkPropagateUnchanged() {
    UUID id = UUID.randomUUID();
    Exception checked = new Exception("checked, not wrapped");
    assertThatThrownBy(() ->
            store.processOnce(
                CONSUMER,
                id,
                c -> {
                  throw checked;
                }))
        .isSameAs(checked);

    // an SQLException of the caller's own statement is not ours to wrap
    assertThatThrownBy(
            () -> store.processOnce(CONSUMER, id, c -> c.createStatement().execute("SELECT nope")))
        .isExactlyInstanceOf(PSQLException.class);

    AssertionError error = new AssertionError("an Error");
    assertThatThrownBy(() ->
            store.processOnce(
                CONSUMER,
                id,
                c -> {
                  throw error;
                }))
        .isSameAs(error);
  }

  @ParameterizedTest(name = "driver visible: {0}")
  @CsvSource({"true", "false"})
  void workThatSwallowsAFailedStatementCannotCommitAndRecordsNothing(boolean driverVisible)
      throws Exception {
    // PostgreSQL turns the COMMIT of an aborted transaction into a rollback and pgjdbc reports it
    // as a success: the inbox must not count such a message as processed.
    InboxStore inbox =
        driverVisible ? store : PostgresInboxStore.create(new ConnectionSpy(ds, true).dataSource());
    UUID id = UUID.randomUUID();
    assertThatThrownBy(() ->
            inbox.processOnce(
                CONSUMER,
                id,
                c -> {
                  insertEffect(c, id, "before the failure");
                  failAndSwallow(c);
                }))
        .isInstanceOf(InboxException.class)
        .hasMessageContaining("message " + id)
        .hasMessageContaining("left its transaction aborted");
    assertThatThrownBy(() ->
            inbox.processBatch(
                CONSUMER,
                List.of(id),
                (c, fresh) -> {
                  insertEffect(c, id, "before the failure");
                  failAndSwallow(c);
                }))
        .isInstanceOf(InboxException.class)
        .hasMessageContaining("left its transaction aborted");
    assertThat(recorded(CONSUMER)).isZero();
    assertThat(effectNotes(id)).isEmpty();
    assertThat(inbox.processOnce(CONSUMER, id, c -> insertEffect(c, id, "retry"))).isTrue();
    assertThat(effectNotes(id)).containsExactly("retry");
  }

  @Test
  void workThatEndsTheTransactionItselfIsRefused() throws Exception {
    UUID id = UUID.randomUUID();
    assertThatThrownBy(() ->
            store.processOnce(
                CONSUMER,
                id,
                c -> {
                  insertEffect(c, id, "rolled back by the work");
                  c.rollback();
                }))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("ended its transaction itself");
    assertThat(recorded(CONSUMER)).isZero();
    assertThat(store.processOnce(CONSUMER, id, c -> insertEffect(c, id, "retry"))).isTrue();
    assertThat(effectNotes(id)).containsExactly("retry");
  }

  private static void failAndSwallow(Connection c) {
    try (Statement s = c.createStatement()) {
      s.execute("SELECT nope");
    } catch (SQLException swallowed) {
      // a handler that logs and carries on
    }
  }

  @Test
  void everyPathClosesTheConnectionWithAutoCommitRestored() throws Exception {
    ConnectionSpy spy = new ConnectionSpy(ds, false);
    InboxStore spied = PostgresInboxStore.create(spy.dataSource());
    UUID id = UUID.randomUUID();
    List<Boolean> autoCommitInWork = new ArrayList<>();
    InboxStore.Work work = c -> autoCommitInWork.add(c.getAutoCommit());

    assertThat(spied.processOnce(CONSUMER, id, work)).isTrue();
    assertThat(spied.processOnce(CONSUMER, id, work)).isFalse();
    assertThatThrownBy(() ->
            spied.processOnce(
                CONSUMER,
                UUID.randomUUID(),
                c -> {
                  throw new IllegalStateException("x");
                }))
        .isInstanceOf(IllegalStateException.class);
    assertThat(spied.processBatch(CONSUMER, List.of(id), (c, fresh) -> {})).isEmpty();
    assertThat(spied.processBatch(CONSUMER, List.of(UUID.randomUUID()), (c, f) -> {})).hasSize(1);

    assertThat(autoCommitInWork).containsExactly(false);
    // including the table check of create(); the batch with a redelivered id runs its two
    // transactions (all-new, rolled back; then the fresh ids) on a connection each
    assertThat(spy.opened).hasValue(7);
    assertThat(spy.autoCommitAtClose).hasSize(7).containsOnly(true);
  }

  @Test
  void aConcurrentDeliveryOfTheSameIdWaitsAndIsADuplicateOnceTheFirstCommits() throws Exception {
    UUID id = UUID.randomUUID();
    CountDownLatch release = new CountDownLatch(1);
    First first = startHolding(id, release, false);

    Future<Boolean> second =
        pool.submit(() -> store.processOnce(CONSUMER, id, c -> insertEffect(c, id, "second")));
    awaitBlockedBy(first.pid());
    assertThat(second).as("second delivery waits for the first").isNotDone();

    release.countDown();
    assertThat(first.result().get(30, SECONDS)).isTrue();
    assertThat(second.get(30, SECONDS)).as("duplicate").isFalse();
    assertThat(effectNotes(id)).containsExactly("first");
    assertThat(recorded(CONSUMER)).isEqualTo(1);
  }

  @Test
  void aConcurrentDeliveryOfTheSameIdAppliesTheMessageWhenTheFirstRollsBack() throws Exception {
    UUID id = UUID.randomUUID();
    CountDownLatch release = new CountDownLatch(1);
    First first = startHolding(id, release, true);

    Future<Boolean> second =
        pool.submit(() -> store.processOnce(CONSUMER, id, c -> insertEffect(c, id, "second")));
    awaitBlockedBy(first.pid());
    assertThat(second).isNotDone();

    release.countDown();
    assertThatThrownBy(() -> first.result().get(30, SECONDS))
        .isInstanceOf(ExecutionException.class)
        .hasRootCauseMessage("first delivery failed");
    assertThat(second.get(30, SECONDS)).as("applied by the second delivery").isTrue();
    assertThat(effectNotes(id)).containsExactly("second");
    assertThat(recorded(CONSUMER)).isEqualTo(1);
  }

  // ---------------------------------------------------------------- processBatch

  @Test
  void aBatchRunsItsWorkWithTheFreshIdsOnly() throws Exception {
    UUID seen = UUID.randomUUID();
    UUID b = UUID.randomUUID();
    UUID c = UUID.randomUUID();
    store.processOnce(CONSUMER, seen, conn -> {});

    List<Set<UUID>> calls = new ArrayList<>();
    Set<UUID> fresh =
        store.processBatch(
            CONSUMER,
            List.of(c, seen, b, c),
            (conn, ids) -> {
              calls.add(ids);
              for (UUID id : ids) {
                insertEffect(conn, id, "batch");
              }
            });

    assertThat(fresh).containsExactly(c, b); // in input order, a repeated id once
    assertThat(calls).containsExactly(fresh);
    assertThat(effectNotes(seen)).isEmpty();
    assertThat(effectNotes(b)).containsExactly("batch");
    assertThat(effectNotes(c)).containsExactly("batch");
    assertThat(recorded(CONSUMER)).isEqualTo(3);

    Set<UUID> again =
        store.processBatch(CONSUMER, List.of(seen, b, c), (conn, ids) -> calls.add(ids));
    assertThat(again).isEmpty();
    assertThat(calls).as("work not called when every id is a duplicate").hasSize(1);
    assertThat(store.processBatch(CONSUMER, List.of(), (conn, ids) -> calls.add(ids))).isEmpty();
    assertThat(calls).as("nor for an empty batch").hasSize(1);
  }

  @Test
  void aBatchOfDistinctIdsWithOneSeenBeforeRunsItsWorkOnceWithTheOthers() throws Exception {
    // distinct ids are first claimed with a plain insert, which a seen id makes fail: the batch is
    // then claimed again skipping it, on the same connection, and the work runs once
    UUID seen = UUID.randomUUID();
    UUID a = UUID.randomUUID();
    UUID b = UUID.randomUUID();
    store.processOnce(CONSUMER, seen, conn -> insertEffect(conn, seen, "single"));
    List<Set<UUID>> calls = new ArrayList<>();

    Set<UUID> fresh =
        store.processBatch(
            CONSUMER,
            List.of(a, seen, b),
            (conn, ids) -> {
              calls.add(ids);
              for (UUID id : ids) {
                insertEffect(conn, id, "batch");
              }
            });

    assertThat(fresh).containsExactly(a, b);
    assertThat(calls).containsExactly(fresh);
    assertThat(effectNotes(seen)).containsExactly("single");
    assertThat(effectNotes(a)).containsExactly("batch");
    assertThat(effectNotes(b)).containsExactly("batch");
    assertThat(recorded(CONSUMER)).isEqualTo(3);
    // all new: recorded by the first claim
    UUID c = UUID.randomUUID();
    assertThat(store.processBatch(CONSUMER, List.of(c), (conn, ids) -> calls.add(ids)))
        .containsExactly(c);
    assertThat(calls).hasSize(2);
    assertThat(recorded(CONSUMER)).isEqualTo(4);
  }

  @Test
  void aFailedBatchRecordsNoId() throws Exception {
    List<UUID> ids = List.of(UUID.randomUUID(), UUID.randomUUID());
    IllegalStateException boom = new IllegalStateException("batch handler failed");
    assertThatThrownBy(() ->
            store.processBatch(
                CONSUMER,
                ids,
                (conn, fresh) -> {
                  insertEffect(conn, ids.get(0), "partial");
                  throw boom;
                }))
        .isSameAs(boom);
    assertThat(recorded(CONSUMER)).isZero();
    assertThat(effectNotes(ids.get(0))).isEmpty();

    assertThat(store.processBatch(CONSUMER, ids, (conn, fresh) -> {}))
        .containsExactlyElementsOf(ids);
  }

  @Test
  void aConcurrentBatchWaitsForOverlappingIdsAndGetsOnlyTheRest() throws Exception {
    UUID x = UUID.randomUUID();
    UUID y = UUID.randomUUID();
    UUID z = UUID.randomUUID();
    CountDownLatch inWork = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger pid = new AtomicInteger();
    Future<Set<UUID>> first =
        pool.submit(() ->
            store.processBatch(
                CONSUMER,
                List.of(x, y),
                (c, fresh) -> {
                  pid.set(backendPid(c));
                  inWork.countDown();
                  assertThat(release.await(30, SECONDS)).isTrue();
                }));
    assertThat(inWork.await(30, SECONDS)).isTrue();

    List<Set<UUID>> secondSaw = new CopyOnWriteArrayList<>();
    Future<Set<UUID>> second =
        pool.submit(
            () -> store.processBatch(CONSUMER, List.of(z, y), (c, fresh) -> secondSaw.add(fresh)));
    awaitBlockedBy(pid.get());
    assertThat(second).isNotDone();

    release.countDown();
    assertThat(first.get(30, SECONDS)).containsExactly(x, y);
    assertThat(second.get(30, SECONDS)).containsExactly(z);
    assertThat(secondSaw).containsExactly(Set.of(z));
  }

  // ---------------------------------------------------------------- advanceVersion

  @Test
  void onlyANewerVersionAdvances() throws Exception {
    assertThat(advance("order:1", 1)).as("first version").isTrue();
    assertThat(advance("order:1", 5)).as("newer").isTrue();
    assertThat(advance("order:1", 5)).as("equal").isFalse();
    assertThat(advance("order:1", 3)).as("older").isFalse();
    assertThat(storedVersion("order:1")).contains(5L);

    assertThat(advance("order:2", 2)).as("entities are independent").isTrue();
    assertThat(storedVersion("order:2")).contains(2L);
    assertThat(storedVersion("order:1")).contains(5L);
  }

  @Test
  void theVersionCommitsAndRollsBackWithTheCallersTransaction() throws Exception {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      assertThat(store.advanceVersion(c, "order:1", 9)).isTrue();
      c.rollback();
    }
    assertThat(storedVersion("order:1")).isEmpty();

    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(true);
      assertThatThrownBy(() -> store.advanceVersion(c, "order:1", 9))
          .isInstanceOf(TransactionRequiredException.class)
          .hasMessageContaining("setAutoCommit(false)");
    }
    assertThat(storedVersion("order:1")).isEmpty();
  }

  @Test
  void anOlderEventInsideTheInboxIsRecordedButDoesNotOverwriteNewerState() throws Exception {
    exec("CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL)");
    record Event(UUID id, long version, String status) {}
    Event shipped = new Event(UUID.randomUUID(), 2, "shipped");
    Event created = new Event(UUID.randomUUID(), 1, "created"); // arrives late

    for (Event e : List.of(shipped, created)) {
      assertThat(
              store.processOnce(
                  CONSUMER,
                  e.id(),
                  c -> {
                    if (store.advanceVersion(c, "order:7", e.version())) {
                      try (PreparedStatement ps =
                          c.prepareStatement(
                              "INSERT INTO orders VALUES ('7', ?)"
                                  + " ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status")) {
                        ps.setString(1, e.status());
                        ps.executeUpdate();
                      }
                    }
                  }))
          .isTrue();
    }
    assertThat(query("SELECT status FROM orders WHERE id = '7'")).containsExactly("shipped");
    assertThat(storedVersion("order:7")).contains(2L);
  }

  @ParameterizedTest(name = "existing row {0}, first advances to 5 and {1}s, second to {2}")
  @CsvSource({
    "false, commit,   3, false, 5",
    "false, commit,   7, true,  7",
    "false, rollback, 3, true,  3",
    "true,  commit,   3, false, 5",
    "true,  commit,   5, false, 5",
    "true,  rollback, 3, true,  3",
  })
  void concurrentAdvancesOfOneEntitySerialise(
      boolean existing, String firstEnds, long secondVersion, boolean secondWins, long stored)
      throws Exception {
    if (existing) {
      assertThat(advance("order:1", 1)).isTrue();
    }
    try (Connection first = ds.getConnection()) {
      first.setAutoCommit(false);
      assertThat(store.advanceVersion(first, "order:1", 5)).isTrue();

      Future<Boolean> second = pool.submit(() -> advance("order:1", secondVersion));
      awaitBlockedBy(backendPid(first));
      assertThat(second).isNotDone();

      if (firstEnds.equals("commit")) {
        first.commit();
      } else {
        first.rollback();
      }
      assertThat(second.get(30, SECONDS)).isEqualTo(secondWins);
    }
    assertThat(storedVersion("order:1")).contains(stored);
  }

  // ---------------------------------------------------------------- purge

  @Test
  void purgeDeletesOnlyThisConsumersRecordsOlderThanTheAge() throws Exception {
    UUID old1 = recordAged(CONSUMER, Duration.ofDays(2));
    UUID old2 = recordAged(CONSUMER, Duration.ofDays(3));
    UUID recent = recordAged(CONSUMER, Duration.ofHours(1));
    UUID otherConsumersOld = recordAged("shipping", Duration.ofDays(3));

    assertThat(store.purge(CONSUMER, Duration.ofDays(1), 100)).isEqualTo(2);
    assertThat(recordedIds(CONSUMER)).containsExactly(recent);
    assertThat(recordedIds("shipping")).containsExactly(otherConsumersOld);
    assertThat(store.purge(CONSUMER, Duration.ofDays(1), 100)).isZero();

    // why retention matters: a purged id is no longer recognised as a duplicate
    assertThat(store.processOnce(CONSUMER, old1, c -> {})).isTrue();
    assertThat(store.processOnce(CONSUMER, old2, c -> {})).isTrue();
  }

  @Test
  void purgeDeletesAtMostTheLimit() throws Exception {
    for (int i = 0; i < 3; i++) {
      recordAged(CONSUMER, Duration.ofDays(2));
    }
    assertThat(store.purge(CONSUMER, Duration.ofDays(1), 2)).isEqualTo(2);
    assertThat(store.purge(CONSUMER, Duration.ofDays(1), 2)).isEqualTo(1);
    assertThat(store.purge(CONSUMER, Duration.ofDays(1), 2)).isZero();
    assertThat(recorded(CONSUMER)).isZero();

    assertThatThrownBy(() -> store.purge(CONSUMER, Duration.ofDays(1), 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.purge(CONSUMER, Duration.ofDays(-1), 1))
        .isInstanceOf(IllegalArgumentException.class);
  }

  // ---------------------------------------------------------------- helpers

  /** The first delivery, inside its work (effect written, dedupe record not yet committed). */
  private record First(int pid, Future<Boolean> result) {}

  private First startHolding(UUID id, CountDownLatch release, boolean thenFail)
      throws InterruptedException {
    CountDownLatch inWork = new CountDownLatch(1);
    AtomicInteger pid = new AtomicInteger();
    Future<Boolean> result =
        pool.submit(() ->
            store.processOnce(
                CONSUMER,
                id,
                c -> {
                  insertEffect(c, id, "first");
                  pid.set(backendPid(c));
                  inWork.countDown();
                  assertThat(release.await(30, SECONDS)).isTrue();
                  if (thenFail) {
                    throw new IllegalStateException("first delivery failed");
                  }
                }));
    assertThat(inWork.await(30, SECONDS)).as("first delivery reached its work").isTrue();
    return new First(pid.get(), result);
  }

  /** Waits until some backend waits for a lock held by backend {@code pid}. */
  private void awaitBlockedBy(int pid) {
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(10))
        .until(() -> {
          try (Connection c = ds.getConnection();
              PreparedStatement ps =
                  c.prepareStatement(
                      "SELECT count(*) FROM pg_stat_activity"
                          + " WHERE ? = ANY(pg_blocking_pids(pid))")) {
            ps.setInt(1, pid);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return rs.getInt(1) > 0;
            }
          }
        });
  }

  private boolean advance(String entity, long version) throws Exception {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      boolean advanced = store.advanceVersion(c, entity, version);
      c.commit();
      return advanced;
    }
  }

  private Optional<Long> storedVersion(String entity) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT version FROM postbox_entity_version WHERE entity = ?")) {
      ps.setString(1, entity);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rs.getLong(1)) : Optional.empty();
      }
    }
  }

  private UUID recordAged(String consumer, Duration age) throws Exception {
    UUID id = UUID.randomUUID();
    assertThat(store.processOnce(consumer, id, c -> {})).isTrue();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "UPDATE postbox_inbox SET processed_at = now() - make_interval(secs => ?)"
                    + " WHERE consumer = ? AND message_id = ?")) {
      ps.setDouble(1, age.toSeconds());
      ps.setString(2, consumer);
      ps.setObject(3, id);
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
    return id;
  }

  private static void insertEffect(Connection c, UUID id, String note) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO effect VALUES (?, ?)")) {
      ps.setObject(1, id);
      ps.setString(2, note);
      ps.executeUpdate();
    }
  }

  private static int backendPid(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private List<String> effectNotes(UUID id) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT note FROM effect WHERE message_id = ? ORDER BY note")) {
      ps.setObject(1, id);
      List<String> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
      return out;
    }
  }

  private int recorded(String consumer) throws SQLException {
    return recordedIds(consumer).size();
  }

  private List<UUID> recordedIds(String consumer) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT message_id FROM postbox_inbox WHERE consumer = ?")) {
      ps.setString(1, consumer);
      List<UUID> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getObject(1, UUID.class));
        }
      }
      return out;
    }
  }

  private List<String> query(String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      List<String> out = new ArrayList<>();
      while (rs.next()) {
        out.add(rs.getString(1));
      }
      return out;
    }
  }

  private void exec(String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /** Wraps a data source: counts connections and records their auto-commit mode at close. */
  private static final class ConnectionSpy {
    final AtomicInteger opened = new AtomicInteger();
    final List<Boolean> autoCommitAtClose = new CopyOnWriteArrayList<>();
    private final DataSource target;
    private final boolean hideDriver;

    /** {@code hideDriver}: the connections claim to wrap nothing, like a foreign pool's. */
    ConnectionSpy(DataSource target, boolean hideDriver) {
      this.target = target;
      this.hideDriver = hideDriver;
    }

    DataSource dataSource() {
      return proxy(
          DataSource.class,
          target,
          (method, result) -> {
            if (method.equals("getConnection")) {
              opened.incrementAndGet();
              Connection real = (Connection) result;
              return proxy(Connection.class, real, (m, r) -> r, real);
            }
            return result;
          },
          null);
    }

    private interface After {
      Object apply(String method, Object result) throws Exception;
    }

    private <T> T proxy(Class<T> type, T delegate, After after, Connection closing) {
      return type.cast(
          Proxy.newProxyInstance(
              type.getClassLoader(),
              new Class<?>[] {type},
              (p, m, args) -> {
                if (closing != null && m.getName().equals("close")) {
                  autoCommitAtClose.add(closing.getAutoCommit());
                }
                if (closing != null && hideDriver && m.getName().equals("isWrapperFor")) {
                  return false;
                }
                try {
                  return after.apply(m.getName(), m.invoke(delegate, args));
                } catch (InvocationTargetException e) {
                  throw e.getCause();
                }
              }));
    }
  }
}
