package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.OffsetStore;
import dev.postbox.jdbc.PostgresOffsetStore;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.GroupProtocol;
import org.apache.kafka.common.GroupType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The offsets-in-PostgreSQL mode against the real broker: each partition's next offset commits with
 * the effect, every assignment seeks to it, and Kafka's committed offsets are not what keeps
 * effects once.
 */
@PostboxTest
class OffsetsInPostgresIT extends Subscribers {

  static Subscription subscription(String group, String topic) {
    return Subscription.builder(group)
        .topics(topic)
        .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
        .ordering(Ordering.PARTITION)
        .build();
  }

  private KafkaSubscriber.Builder subscriber(
      PostboxTestContext ctx, Subscription sub, OffsetStore offsets) {
    return KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
        .offsetStore(offsets)
        .handler(d -> Effects.apply(d.connection().orElseThrow(), sub.name(), d));
  }

  @Test
  void aCrashAfterTheEffectBeforeTheKafkaCommitRepeatsNoEffect(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 2);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 400; i++) {
        ms.add(Effects.message(topic, "k" + (i % 25), i));
      }
      fx.publishAll(ms);
      try (ChildJvm child =
          ChildJvm.builder(OffsetConsumerChildMain.class)
              .args(ctx.jdbcUrl(), ctx.bootstrapServers(), topic, "crashing")
              .systemProperty(
                  CrashPoints.PROPERTY, "consumer.after-effect-before-offset-commit@150")
              .start()) {
        assertThat(child.waitFor(Duration.ofSeconds(120))).contains(CrashPoints.EXIT_CODE);
      }
      long applied = fx.effects("crashing");
      assertThat(applied).isGreaterThanOrEqualTo(150).isLessThan(400);
      long storedNext =
          fx.count(
              "SELECT coalesce(sum(next_offset), 0) FROM postbox_consumer_offset"
                  + " WHERE consumer_group = 'crashing'");
      long kafkaCommitted =
          Math.max(0, fx.committedOffset("crashing", topic, 0))
              + Math.max(0, fx.committedOffset("crashing", topic, 1));
      assertThat(storedNext).as("the stored offsets are the effects'").isEqualTo(applied);
      assertThat(kafkaCommitted)
          .as("Kafka's committed offsets lag the effects (the crash came before the commit)")
          .isLessThan(storedNext);

      Subscription sub = subscription("crashing", topic);
      KafkaSubscriber s =
          start(
              subscriber(ctx, sub, PostgresOffsetStore.create(ctx.dataSource()))
                  .consumerProperty("max.poll.interval.ms", 10_000));
      await().atMost(Duration.ofSeconds(90)).until(() -> fx.distinctEffects("crashing") == 400);
      await().atMost(Duration.ofSeconds(30)).until(() -> s.inFlight() == 0);
      assertThat(fx.effects("crashing")).as("no second effect").isEqualTo(400);
      assertThat(s.stats().received())
          .as("reading resumed at the stored offsets, not at Kafka's")
          .isEqualTo(400 - applied);
    }
  }

  @ParameterizedTest(name = "group.protocol={0}")
  @EnumSource(GroupProtocol.class)
  void aRebalanceBetweenTwoInstancesDuplicatesAndLosesNothing(
      GroupProtocol protocol, PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 4);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      OffsetStore offsets = PostgresOffsetStore.create(ctx.dataSource());
      String group = "moving-" + protocol.name().toLowerCase(java.util.Locale.ROOT);
      Subscription sub = subscription(group, topic);
      List<Message> ms = new ArrayList<>();
      for (int seq = 0; seq < 20; seq++) {
        for (int k = 0; k < 100; k++) {
          ms.add(Effects.message(topic, "key-" + k, seq));
        }
      }
      fx.publishAll(ms);
      KafkaSubscriber first = start(subscriber(ctx, sub, offsets).groupProtocol(protocol));
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects(group) >= 300);
      KafkaSubscriber second = start(subscriber(ctx, sub, offsets).groupProtocol(protocol));
      await().atMost(Duration.ofSeconds(90)).until(() -> second.assignment().size() > 0);
      assertThat(groupType(ctx, group))
          .isEqualTo(protocol == GroupProtocol.CONSUMER ? GroupType.CONSUMER : GroupType.CLASSIC);
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects(group) >= 1000);
      first.close(); // its partitions move to the second instance mid-stream
      await().atMost(Duration.ofSeconds(120)).until(() -> fx.distinctEffects(group) == 2000);
      await().atMost(Duration.ofSeconds(30)).until(() -> second.inFlight() == 0);
      assertThat(fx.effects(group)).as("no duplicate effect").isEqualTo(2000);
      List<Long> expected = new ArrayList<>();
      for (long s = 0; s < 20; s++) {
        expected.add(s);
      }
      fx.effectOrder(group).forEach((k, v) -> assertThat(v).as(k).isEqualTo(expected));
      assertThat(
              fx.count(
                  "SELECT count(*) FROM postbox_consumer_offset WHERE consumer_group = '"
                      + group
                      + "'"))
          .as("state is one row per partition")
          .isEqualTo(4);
    }
  }

  private static GroupType groupType(PostboxTestContext ctx, String group) throws Exception {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, ctx.bootstrapServers());
    try (Admin admin = Admin.create(p)) {
      return admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get().type();
    }
  }
}
