package dev.postbox.bench.internal;

import dev.postbox.admin.DeadLetterFilter;
import dev.postbox.admin.Page;
import dev.postbox.admin.PageRequest;
import dev.postbox.admin.PostboxAdmin;
import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import dev.postbox.core.spi.DeadLetterStore.Status;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * The operations API's queries on 100,000 dead letters in 500 failure groups (issue 20: the grouped
 * list and a filtered page within 200 ms p99): each query timed repeatedly through {@link
 * PostboxAdmin}, after VACUUM ANALYZE (as autovacuum leaves a table that size).
 */
public final class AdminBench {

  /** Dead letters seeded (the size). */
  public static final int LETTERS = 100_000;

  /** Dead letters seeded in {@code --quick} mode (CI: the seed is most of the cost). */
  public static final int QUICK_LETTERS = 10_000;

  /** Failure groups (fingerprints) among them. */
  public static final int GROUPS = 500;

  private static final String SEED =
      "INSERT INTO postbox_dead_letter (consumer, topic, partition, \"offset\", message_id, type,"
          + " msg_key, value, header_names, header_values, classification, error_class,"
          + " error_message, stack_trace, fingerprint, attempts, first_failure, last_failure, status)"
          + " SELECT 'consumer-' || (i % 10), 'topic-' || (i % 20), 0, i, gen_random_uuid(),"
          + " 'type-' || (i % 25), convert_to('key-' || (i % 5000), 'UTF8'), '\\x7b7d',"
          + " ARRAY['ce_tenant'], ARRAY[convert_to('tenant-' || (i % 50), 'UTF8')], 'PERMANENT',"
          + " 'com.example.Error' || ((i % "
          + GROUPS
          + ") % 40), 'failure ' || (i % "
          + GROUPS
          + "), 'java.lang.RuntimeException\n\tat x', 'fp-' || (i % "
          + GROUPS
          + "), 3, now() - make_interval(secs => i * 6), now() - make_interval(secs => i * 6 - 2),"
          + " CASE WHEN i % 10 = 0 THEN 'REPLAYED' ELSE 'PENDING' END"
          + " FROM generate_series(1, ?) AS i";

  private final BenchEnv env;
  private final BenchConfig config;
  private final PrintStream log;
  private int letters;

  public AdminBench(BenchEnv env, BenchConfig config, PrintStream log) {
    this.env = env;
    this.config = config;
    this.log = log;
  }

  /** Seeds, then times each query; p50 and p99 in ms, the p99s with the target. */
  public List<Measurement> run() {
    DataSource ds = env.database("admin", 2).dataSource();
    int letters = config.quick() ? QUICK_LETTERS : LETTERS;
    log.println("bench: admin: seeding " + letters + " dead letters in " + GROUPS + " groups");
    try (java.sql.Connection c = ds.getConnection();
        java.sql.PreparedStatement ps = c.prepareStatement(SEED)) {
      ps.setInt(1, letters);
      ps.executeUpdate();
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException("seeding dead letters failed", e);
    }
    BenchEnv.execute(ds, "VACUUM ANALYZE postbox_dead_letter");
    this.letters = letters;
    PostboxAdmin admin = PostboxAdmin.builder(ds).build();
    int runs = config.quick() ? 30 : 200;
    DeadLetterFilter pending = DeadLetterFilter.builder().status(Status.PENDING).build();
    DeadLetterFilter consumer =
        DeadLetterFilter.builder().consumer("consumer-3").status(Status.PENDING).build();
    DeadLetterFilter tenantAndError =
        DeadLetterFilter.builder().tenant("tenant-7").errorClass("com.example.Error7").build();
    String deep = cursorAfter(admin, consumer, 10);
    List<Measurement> out = new ArrayList<>();
    time(out, "admin_groups_pending", runs, () -> admin.groups(pending, PageRequest.first(50)));
    time(
        out,
        "admin_groups_all",
        runs,
        () -> admin.groups(DeadLetterFilter.all(), PageRequest.first(50)));
    time(
        out, "admin_page_consumer", runs, () -> admin.deadLetters(consumer, PageRequest.first(50)));
    time(
        out,
        "admin_page_consumer_deep",
        runs,
        () -> admin.deadLetters(consumer, PageRequest.after(deep, 50)));
    time(
        out,
        "admin_page_tenant_error_class",
        runs,
        () -> admin.deadLetters(tenantAndError, PageRequest.first(50)));
    return out;
  }

  /** The cursor after {@code pages} pages of 50. */
  private static String cursorAfter(PostboxAdmin admin, DeadLetterFilter f, int pages) {
    Page<?> p = admin.deadLetters(f, PageRequest.first(50));
    for (int i = 1; i < pages; i++) {
      p = admin.deadLetters(f, PageRequest.after(p.next().orElseThrow(), 50));
    }
    return p.next().orElseThrow();
  }

  private void time(List<Measurement> out, String name, int runs, Supplier<Page<?>> query) {
    for (int i = 0; i < 5; i++) {
      query.get(); // warm-up: plans cached, pages in shared buffers
    }
    double[] ms = new double[runs];
    for (int i = 0; i < runs; i++) {
      long t0 = System.nanoTime();
      Page<?> page = query.get();
      ms[i] = (System.nanoTime() - t0) / 1e6;
      if (page.items().isEmpty()) {
        throw new IllegalStateException(name + " found nothing");
      }
    }
    Arrays.sort(ms);
    double p50 = ms[runs / 2];
    double p99 = ms[Math.min(runs - 1, (int) Math.ceil(runs * 0.99) - 1)];
    out.add(Measurement.of(name + "_p50_ms", p50, "ms"));
    out.add(
        Measurement.of(name + "_p99_ms", p99, "ms")
            .target(Target.atMost(200))
            .note(runs + " runs, " + letters + " letters in " + GROUPS + " groups"));
  }
}
