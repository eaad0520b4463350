package dev.postbox.testkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks a test class that runs against the real Kafka broker and PostgreSQL server of {@link
 * PostboxInfrastructure}: registers {@link PostboxExtension}, so that test methods can take a
 * {@link PostboxTestContext} parameter, and tags the tests {@code integration}.
 *
 * <p>Each context's schema is new and empty; with {@code migrate = true} it already holds Postbox's
 * tables when the test gets it (needs {@code postbox-jdbc} on the test class path).
 */
@Target({ElementType.TYPE, ElementType.ANNOTATION_TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(PostboxExtension.class)
@Tag("integration")
public @interface PostboxTest {

  /** Whether each test's schema is migrated (Postbox's tables created) before the test gets it. */
  boolean migrate() default false;
}
