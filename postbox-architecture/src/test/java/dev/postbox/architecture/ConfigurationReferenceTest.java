package dev.postbox.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Backoff;
import dev.postbox.core.consumer.DependencyGuard;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.cdc.CdcRelay;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.kafka.KafkaRequester;
import dev.postbox.kafka.KafkaResponder;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.kafka.KafkaTransformer;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import dev.postbox.rabbitmq.RabbitRequester;
import dev.postbox.rabbitmq.RabbitResponder;
import dev.postbox.rabbitmq.RabbitSubscriber;
import dev.postbox.redis.RedisIdempotencyStore;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Keeps the configuration reference ({@value #CONFIGURATION}) from drifting away from the code:
 * each builder's table must list every public option of the builder, and a documented default must
 * agree with the builder's {@code DEFAULT_*} constant (the builders initialise their fields from
 * those constants). The schema section must name every table the Flyway migrations create.
 *
 * <p>Rules, per table (found by the heading that names {@code Type.builder(}):
 *
 * <ul>
 *   <li>every public instance method of {@code Type.Builder} but {@code build} is a row;
 *   <li>every row names builder methods only (a row whose default is {@code (required)} may name a
 *       {@code builder(...)} argument instead);
 *   <li>a row whose option has a constant {@code Type.DEFAULT_<OPTION>} (or, for a setting shared
 *       by several builders, {@code DEFAULT_<OPTION>} on the builder's base class) starts its
 *       default cell with the constant's value written as {@link #render(Object)} writes it (a map:
 *       every {@code `name=value`} appears in the cell);
 *   <li>a row without such a constant must not state a number as its default: numbers are only
 *       documented from constants.
 * </ul>
 */
class ConfigurationReferenceTest {

  /**
   * The builders documented in the configuration reference, each with the type holding its
   * defaults.
   */
  static Stream<Class<?>> documentedBuilders() {
    return Stream.of(
        Outbox.class,
        PostgresRelayStore.class,
        Relay.class,
        CdcRelay.class,
        KafkaRelayPublisher.class,
        Subscription.class,
        RetryPolicy.class,
        DependencyGuard.class,
        KafkaSubscriber.class,
        dev.postbox.kafka.KafkaShareSubscriber.class,
        KafkaTransformer.class,
        RabbitRelayPublisher.class,
        RabbitSubscriber.class,
        RedisIdempotencyStore.class,
        KafkaRequester.class,
        KafkaResponder.class,
        RabbitRequester.class,
        RabbitResponder.class);
  }

  private static final Pattern CODE = Pattern.compile("`([^`]+)`");
  private static final Pattern NUMBER_FIRST = Pattern.compile("^[0-9].*");

  @ParameterizedTest(name = "{0}")
  @MethodSource("documentedBuilders")
  void theTableListsEveryOptionWithTheDefaultOfItsConstant(Class<?> type) throws IOException {
    List<Row> rows = table(page(CONFIGURATION), type);
    Class<?> builder = builderOf(type);
    Set<String> options = options(builder);
    List<String> problems = new ArrayList<>();

    Set<String> documented = new TreeSet<>();
    for (Row row : rows) {
      documented.addAll(row.settings());
    }
    for (String option : options) {
      if (!documented.contains(option)) {
        problems.add("option `" + option + "` of " + builder.getName() + " has no row");
      }
    }
    for (Row row : rows) {
      for (String setting : row.settings()) {
        if (!options.contains(setting) && !row.defaultCell().equals("(required)")) {
          problems.add("row `" + setting + "` is not an option of " + builder.getName());
        }
        Field constant = constant(type, setting);
        if (constant == null) {
          // a setting several builders share is declared once, with its default, on their
          // common base (RequesterBuilder): found through the builder's superclasses
          constant = constant(builder, setting);
        }
        if (constant != null) {
          problems.addAll(agreement(type, setting, constant, row.defaultCell()));
        } else if (NUMBER_FIRST.matcher(row.defaultCell()).matches()) {
          problems.add(
              "row `"
                  + setting
                  + "` documents the number '"
                  + row.defaultCell()
                  + "' but "
                  + type.getSimpleName()
                  + " has no constant DEFAULT_"
                  + upperSnake(setting));
        }
      }
    }
    assertThat(problems)
        .as("%s table of %s.builder(...)", CONFIGURATION, type.getSimpleName())
        .isEmpty();
  }

  @Test
  void everyBuilderDefaultIsReadFromItsConstant() {
    // The other direction: a DEFAULT_* constant named for an option must have that option.
    List<String> problems = new ArrayList<>();
    documentedBuilders()
        .forEach(type -> {
          Set<String> names =
              options(builderOf(type)).stream()
                  .flatMap(o -> constantNames(o).stream())
                  .collect(Collectors.toSet());
          for (Field f : type.getFields()) {
            if (isDefaultConstant(f)
                && !names.contains(f.getName())
                && !NOT_OPTIONS.contains(type.getSimpleName() + "." + f.getName())) {
              problems.add(type.getSimpleName() + "." + f.getName() + " names no option");
            }
          }
        });
    assertThat(problems).isEmpty();
  }

  /** Constants named DEFAULT_* that are not builder options, with why. */
  private static final Set<String> NOT_OPTIONS =
      Set.of(
          // the store's key prefix under its older name (DEFAULT_KEY_PREFIX is the option's)
          "RedisIdempotencyStore.DEFAULT_PREFIX",
          // the TTL a caller passes per completion; the subscription's idempotencyTtl sets it
          "RedisIdempotencyStore.DEFAULT_TTL",
          // a consumer property's default (max.poll.records), set through consumerProperty
          "KafkaShareSubscriber.DEFAULT_MAX_POLL_RECORDS");

  @Test
  void theSchemaSectionNamesEveryTableOfTheMigrations() throws IOException {
    Set<String> created = new TreeSet<>();
    Pattern createTable =
        Pattern.compile(
            "CREATE\\s+TABLE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?(postbox_\\w+)",
            Pattern.CASE_INSENSITIVE);
    for (PostboxMigrations.Script script : PostboxMigrations.scripts()) {
      Matcher m = createTable.matcher(script.sql());
      while (m.find()) {
        created.add(m.group(1).toLowerCase(Locale.ROOT));
      }
    }
    assertThat(created).as("tables the migrations create").hasSizeGreaterThanOrEqualTo(9);

    String schema = page(SCHEMA);
    Set<String> named = new TreeSet<>();
    Matcher m = Pattern.compile("`(postbox_\\w+)`").matcher(schema);
    while (m.find()) {
      named.add(m.group(1));
    }
    named.remove(PostboxMigrations.HISTORY_TABLE); // Flyway's, not a migration's
    assertThat(named).as("tables named in %s", SCHEMA).isEqualTo(created);
  }

  @Test
  void theRenderingMatchesTheReadmesWayOfWritingValues() {
    assertThat(render(Duration.ofMillis(100))).isEqualTo("100 ms");
    assertThat(render(Duration.ofSeconds(90))).isEqualTo("90 s");
    assertThat(render(Duration.ofMinutes(10))).isEqualTo("10 min");
    assertThat(render(Duration.ofHours(1))).isEqualTo("1 h");
    assertThat(render(Duration.ofDays(7))).isEqualTo("7 days");
    assertThat(render(2_000)).isEqualTo("2,000");
    assertThat(render(50f)).isEqualTo("50 %");
    assertThat(render(true)).isEqualTo("`true`");
    assertThat(render(Backoff.DEFAULT)).isEqualTo("100 ms × 2ⁿ ≤ 10 s, 50 % jitter");
    assertThat(render(List.of(Duration.ofSeconds(10), Duration.ofMinutes(1))))
        .isEqualTo("10 s, 1 min");
  }

  @Test
  void aDriftedDefaultIsCaught() {
    // The check this class makes, on a row that says 2 s where the constant says 5 s.
    Field backoff = constant(RetryPolicy.class, "backoff");
    assertThat(agreement(RetryPolicy.class, "backoff", backoff, "100 ms × 2ⁿ ≤ 2 s, 50 % jitter"))
        .singleElement()
        .asString()
        .contains("DEFAULT_BACKOFF");
  }

  // --- the documentation pages

  /** The configuration reference page of the documentation site, from the project's root. */
  static final String CONFIGURATION = "docs/reference/configuration.md";

  /** The schema page, which names every table of the migrations. */
  static final String SCHEMA = "docs/reference/schema.md";

  record Row(List<String> settings, String defaultCell) {}

  static String page(String relativePath) throws IOException {
    Path here = Path.of("").toAbsolutePath();
    for (Path dir = here; dir != null; dir = dir.getParent()) {
      Path candidate = dir.resolve(relativePath);
      if (Files.exists(candidate) && Files.exists(dir.resolve("postbox-core"))) {
        return Files.readString(candidate);
      }
    }
    throw new IllegalStateException("no " + relativePath + " of the project above " + here);
  }

  /** The text from {@code heading} to the next heading of any level. */
  static String section(String doc, String heading) {
    int start = doc.indexOf("\n" + heading);
    assertThat(start).as("heading %s", heading).isNotNegative();
    int end = doc.indexOf("\n#", start + 1);
    return doc.substring(start + 1, end < 0 ? doc.length() : end);
  }

  /** The rows of the table under the heading that names {@code Type.builder(}. */
  static List<Row> table(String doc, Class<?> type) {
    String marker = "`" + type.getSimpleName() + ".builder(";
    String heading =
        doc.lines()
            .filter(l -> l.startsWith("## ") && l.contains(marker))
            .findFirst()
            .orElseThrow(() ->
                new AssertionError(
                    CONFIGURATION + " has no ## heading naming " + marker + "...)`"));
    List<Row> rows = new ArrayList<>();
    for (String line : section(doc, heading).lines().toList()) {
      if (!line.startsWith("|") || line.startsWith("| setting") || line.startsWith("| ---")) {
        continue;
      }
      String[] cells = line.split("(?<!\\\\)\\|");
      List<String> settings = new ArrayList<>();
      Matcher m = CODE.matcher(cells[1]);
      while (m.find()) {
        settings.add(m.group(1));
      }
      rows.add(new Row(settings, cells[2].trim()));
    }
    assertThat(rows).as("rows of the table under %s", heading).isNotEmpty();
    return rows;
  }

  // --- the code

  static Class<?> builderOf(Class<?> type) {
    return Arrays.stream(type.getDeclaredClasses())
        .filter(c -> c.getSimpleName().equals("Builder"))
        .findFirst()
        .orElseThrow(() -> new AssertionError(type.getName() + " has no nested Builder"));
  }

  static Set<String> options(Class<?> builder) {
    // public methods of the builder and of the base it shares with other builders (not Object's)
    return Arrays.stream(builder.getMethods())
        .filter(m -> m.getDeclaringClass() != Object.class && !m.isBridge())
        .filter(m -> Modifier.isPublic(m.getModifiers()) && !Modifier.isStatic(m.getModifiers()))
        .map(Method::getName)
        .filter(n -> !n.equals("build"))
        .collect(Collectors.toCollection(TreeSet::new));
  }

  static boolean isDefaultConstant(Field f) {
    return f.getName().startsWith("DEFAULT_")
        && Modifier.isStatic(f.getModifiers())
        && Modifier.isFinal(f.getModifiers());
  }

  /**
   * {@code DEFAULT_<OPTION>}, or its plural for an option that adds one entry at a time ({@code
   * producerProperty}: {@code DEFAULT_PRODUCER_PROPERTIES}).
   */
  static Field constant(Class<?> type, String option) {
    for (String name : constantNames(option)) {
      try {
        Field f = type.getField(name);
        if (isDefaultConstant(f)) {
          return f;
        }
      } catch (NoSuchFieldException e) {
        // try the next form
      }
    }
    return null;
  }

  static List<String> constantNames(String option) {
    String upper = upperSnake(option);
    String plural =
        upper.endsWith("Y") ? upper.substring(0, upper.length() - 1) + "IES" : upper + "S";
    return List.of("DEFAULT_" + upper, "DEFAULT_" + plural);
  }

  static String upperSnake(String camel) {
    return camel.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toUpperCase(Locale.ROOT);
  }

  static List<String> agreement(Class<?> type, String option, Field constant, String cell) {
    Object value;
    try {
      value = constant.get(null);
    } catch (IllegalAccessException e) {
      throw new AssertionError(e);
    }
    String where = type.getSimpleName() + "." + constant.getName();
    if (value instanceof Map<?, ?> map) {
      List<String> missing = new ArrayList<>();
      map.forEach((k, v) -> {
        String pair = "`" + k + "=" + v + "`";
        if (!cell.contains(pair)) {
          missing.add(
              "row `" + option + "` does not show " + pair + " (" + where + ") in: " + cell);
        }
      });
      return missing;
    }
    String expected = render(value);
    if (!cell.startsWith(expected)) {
      return List.of(
          "row `"
              + option
              + "` says '"
              + cell
              + "' but "
              + where
              + " is '"
              + expected
              + "' (the cell must start with it)");
    }
    return List.of();
  }

  /** A default as the configuration reference writes it. */
  static String render(Object value) {
    return switch (value) {
      case Duration d -> duration(d);
      case Backoff b ->
          duration(b.initial())
              + (b.multiplier() == 2 ? " × 2ⁿ" : " × " + number(b.multiplier()) + "ⁿ")
              + " ≤ "
              + duration(b.max())
              + ", "
              + number(b.jitter() * 100)
              + " % jitter";
      case Float f -> number(f) + " %";
      case Integer i -> String.format(Locale.ROOT, "%,d", i);
      case Long l -> String.format(Locale.ROOT, "%,d", l);
      case Boolean b -> "`" + b + "`";
      case Enum<?> e -> "`" + e.name() + "`";
      case String s -> "`" + s + "`";
      case List<?> list ->
          list.stream().map(ConfigurationReferenceTest::render).collect(Collectors.joining(", "));
      default -> throw new AssertionError("no documented form for " + value.getClass());
    };
  }

  private static String number(double d) {
    return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
  }

  private static String duration(Duration d) {
    if (d.isZero()) {
      return "0";
    }
    if (d.toMillis() % 1000 != 0 || d.compareTo(Duration.ofSeconds(1)) < 0) {
      return d.toMillis() + " ms";
    }
    long s = d.toSeconds();
    if (s % 86_400 == 0) {
      return s / 86_400 + (s == 86_400 ? " day" : " days");
    }
    if (s % 3_600 == 0) {
      return s / 3_600 + " h";
    }
    if (s % 60 == 0) {
      return s / 60 + " min";
    }
    return s + " s";
  }
}
