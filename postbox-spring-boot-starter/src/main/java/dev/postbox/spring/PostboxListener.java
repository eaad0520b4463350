package dev.postbox.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.core.annotation.AliasFor;

/**
 * Marks a bean method as the handler of a topic. Its guarantee, retries, backoff, ordering,
 * concurrency, dead letters and parking come from the delivery table ({@code
 * postbox.topics.<topic>.*}). The method may take, in any order: the {@code Delivery}, the {@code
 * Message}, the payload as a {@code String} (UTF-8) or {@code byte[]}, and the inbox transaction's
 * {@code java.sql.Connection} ({@code effectively-once} topics only: do the effect on it). A thrown
 * exception is a failed attempt (retried, then given up as the table says).
 *
 * <p>An {@code effectively-once} handler runs inside a transaction of the application's {@code
 * PlatformTransactionManager} that also holds the dedupe record: what it writes through {@code
 * JdbcTemplate}, {@code JdbcClient}, Spring Data repositories, the {@code TransactionalOutbox} or
 * {@code @Transactional} services that join ({@code REQUIRED}, the default) commits with the record
 * or not at all. A {@code REQUIRES_NEW} service, or another {@code DataSource}, commits on its own:
 * outside the guarantee.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface PostboxListener {

  /** The topic to consume; {@code ${...}} placeholders are resolved. */
  String topic();

  /**
   * The listener's id: required, and stable across refactorings (renaming the method, the class or
   * the bean changes nothing). It is the consumer group and the name of the listener's inbox
   * records, unless {@code postbox.listeners.<id>.group} names the group; a listener without one is
   * refused at start-up. Placeholders are resolved.
   */
  @AliasFor("name")
  String id() default "";

  /** The same as {@link #id()} (its earlier name). */
  @AliasFor("id")
  String name() default "";
}
