package dev.postbox.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a bean method as the handler of a topic. Its guarantee, retries, backoff, ordering,
 * concurrency, dead letters and parking come from the delivery table ({@code
 * postbox.topics.<topic>.*}). The method may take, in any order: the {@code Delivery}, the {@code
 * Message}, the payload as a {@code String} (UTF-8) or {@code byte[]}, and the inbox transaction's
 * {@code java.sql.Connection} ({@code effectively-once} topics only: do the effect on it). A thrown
 * exception is a failed attempt (retried, then given up as the table says).
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface PostboxListener {

  /** The topic to consume; {@code ${...}} placeholders are resolved. */
  String topic();

  /**
   * The subscription's name, which is the consumer group; default {@code <bean name>.<method
   * name>}. Placeholders are resolved.
   */
  String name() default "";
}
