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
 */
@Target({ElementType.TYPE, ElementType.ANNOTATION_TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(PostboxExtension.class)
@Tag("integration")
public @interface PostboxTest {}
