package dev.postbox.testkit.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.annotation.AliasFor;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.ContextCustomizerFactories;

/**
 * A {@code @SpringBootTest} of a Postbox application on the test kit's shared servers:
 *
 * <ul>
 *   <li>a PostgreSQL schema of the test's own ({@code spring.datasource.url}, with credentials; the
 *       application's DataSource, e.g. Boot's HikariCP pool, connects there);
 *   <li>the shared Kafka broker ({@code postbox.kafka.bootstrap-servers}), or, with {@code
 *       postbox.transport: rabbitmq}, the shared RabbitMQ node ({@code postbox.rabbitmq.uri});
 *   <li>every topic of the delivery table ({@code postbox.topics.*}) and of {@link #topics()}
 *       created on Kafka before the application starts (an existing one is kept);
 *   <li>the application closed after the test class ({@code @DirtiesContext}: the relay and the
 *       listeners stop while the servers run), then the test kit's context (its pools).
 * </ul>
 *
 * <p>These settings come before the application's own ({@code application.yml}); the {@link
 * dev.postbox.testkit.PostboxTestContext} is a bean, for tests that want its data source or more
 * topics. The shared servers stay up for the other tests and stop with the JVM.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@SpringBootTest
@DirtiesContext
@ContextCustomizerFactories(PostboxContextCustomizerFactory.class)
public @interface PostboxSpringBootTest {

  /** The application's configuration classes ({@link SpringBootTest#classes()}). */
  @AliasFor(annotation = SpringBootTest.class, attribute = "classes")
  Class<?>[] classes() default {};

  /** Further properties ({@link SpringBootTest#properties()}). */
  @AliasFor(annotation = SpringBootTest.class, attribute = "properties")
  String[] properties() default {};

  /**
   * The name of the test's PostgreSQL schema (the test kit adds a unique suffix); default: the test
   * class's simple name.
   */
  String schema() default "";

  /** Kafka topics to create besides the delivery table's (e.g. topics only listeners read). */
  String[] topics() default {};

  /** Partitions of each topic created. */
  int partitions() default 1;
}
