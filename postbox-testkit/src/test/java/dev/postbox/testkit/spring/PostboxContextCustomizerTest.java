package dev.postbox.testkit.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.testkit.PostboxTestContext;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.junit.jupiter.api.Test;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.core.env.MapPropertySource;

/**
 * What {@link PostboxSpringBootTest} does to an application context, on the test kit's shared
 * servers: the schema and the broker come first among the properties, the delivery table's topics
 * (dots in their names) and the extra ones exist before the context starts, and the test kit's
 * context closes only after the application's lifecycle beans stopped.
 */
class PostboxContextCustomizerTest {

  @Test
  void theContextRunsOnTheTestKitAndClosesBeforeIt() throws Exception {
    String suffix = UUID.randomUUID().toString().substring(0, 8);
    String table = "customizer.orders-" + suffix;
    String extra = "customizer.extra-" + suffix;
    List<String> events = new CopyOnWriteArrayList<>();
    PostboxTestContext kit;
    try (GenericApplicationContext app = new GenericApplicationContext()) {
      app.getEnvironment()
          .getPropertySources()
          .addFirst(
              new MapPropertySource(
                  "application",
                  Map.of(
                      "postbox.topics[" + table + "].guarantee",
                      "effectively-once",
                      "spring.datasource.url",
                      "jdbc:postgresql://production/never")));
      new PostboxContextCustomizer("customizer", List.of(extra), 2).customizeContext(app, null);
      kit =
          (PostboxTestContext)
              app.getDefaultListableBeanFactory().getSingleton("postboxTestContext");
      app.registerBean(
          "listeners",
          SmartLifecycle.class,
          () -> new Recorder(events, () -> kit.dataSource() != null));
      app.refresh();

      assertThat(app.getEnvironment().getProperty("spring.datasource.url"))
          .isEqualTo(kit.jdbcUrl());
      assertThat(app.getEnvironment().getProperty("postbox.kafka.bootstrap-servers"))
          .isEqualTo(kit.bootstrapServers());
      try (Admin admin =
          Admin.create(
              Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kit.bootstrapServers()))) {
        assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS)).contains(table, extra);
        assertThat(
                admin
                    .describeTopics(List.of(table))
                    .allTopicNames()
                    .get(30, TimeUnit.SECONDS)
                    .get(table)
                    .partitions())
            .hasSize(2);
      }
    }
    assertThat(events).containsExactly("started", "stopped with the test kit open");
    assertThatThrownBy(kit::dataSource).isInstanceOf(IllegalStateException.class);
  }

  /** A lifecycle bean (the relay, the listeners) that notes whether the test kit was open. */
  private record Recorder(List<String> events, java.util.function.BooleanSupplier kitOpen)
      implements SmartLifecycle {
    private static volatile boolean running;

    @Override
    public void start() {
      running = true;
      events.add("started");
    }

    @Override
    public void stop() {
      boolean open;
      try {
        open = kitOpen.getAsBoolean();
      } catch (IllegalStateException e) {
        open = false;
      }
      events.add(open ? "stopped with the test kit open" : "stopped after the test kit closed");
      running = false;
    }

    @Override
    public boolean isRunning() {
      return running;
    }
  }
}
