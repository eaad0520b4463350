package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.DecodingException;
import dev.postbox.core.MessageConflictException;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.PostboxException;
import dev.postbox.core.codec.EncodingException;
import dev.postbox.core.consumer.DependencyUnavailableException;
import dev.postbox.core.consumer.IdempotencyKeyBusyException;
import dev.postbox.core.consumer.TenantRejectedException;
import dev.postbox.jdbc.DeadLetterException;
import dev.postbox.jdbc.DuplicateMessageIdException;
import dev.postbox.jdbc.InboxException;
import dev.postbox.jdbc.OutboxException;
import dev.postbox.jdbc.ReplayInterruptedException;
import dev.postbox.jdbc.TransactionRequiredException;
import dev.postbox.redis.RedisStoreException;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * One exception root: every exception the library modules throw is a {@link PostboxException}, so
 * {@code catch (PostboxException e)} catches them all (issue 14). Here because this module's tests
 * see every library module with exceptions (core, jdbc, kafka, redis; micrometer has none).
 */
class ExceptionRootTest {

  /** The public exceptions of the library modules, by name, so that none can silently drop out. */
  private static final List<Class<? extends Throwable>> PUBLIC_EXCEPTIONS =
      List.of(
          // postbox-core
          PostboxException.class,
          PermanentMessageException.class,
          DecodingException.class,
          MessageConflictException.class,
          EncodingException.class,
          DependencyUnavailableException.class,
          IdempotencyKeyBusyException.class,
          TenantRejectedException.class,
          dev.postbox.core.spi.LaneFencedException.class,
          dev.postbox.core.reply.RequestTimeoutException.class,
          dev.postbox.core.reply.RequesterBusyException.class,
          dev.postbox.core.reply.RequestFailedException.class,
          dev.postbox.core.reply.InvalidRequestException.class,
          // postbox-jdbc
          OutboxException.class,
          InboxException.class,
          DeadLetterException.class,
          DuplicateMessageIdException.class,
          TransactionRequiredException.class,
          ReplayInterruptedException.class,
          // postbox-kafka
          InboxRetentionTooShortException.class,
          IdempotencyTtlTooShortException.class,
          DeliveryCountExceededException.class,
          KafkaAccessDeniedException.class,
          // postbox-redis
          RedisStoreException.class);

  /**
   * Throwables that are never thrown to a caller: the relay's outcome value for an unreadable row
   * (a package-private class of core's internals, recorded, not thrown).
   */
  private static final Set<String> NOT_THROWN =
      Set.of("dev.postbox.core.engine.relay.UnreadableRows$UnreadableRowException");

  @Test
  void everyPublicExceptionOfTheLibraryIsAPostboxException() {
    assertThat(PUBLIC_EXCEPTIONS)
        .allSatisfy(c -> assertThat(PostboxException.class).isAssignableFrom(c));
  }

  @Test
  void everyThrowableInTheLibraryModulesIsAPostboxExceptionAndListedAboveIfPublic()
      throws Exception {
    List<Class<?>> throwables = new ArrayList<>();
    for (Class<?> anchor :
        List.of(
            PostboxException.class,
            OutboxException.class,
            KafkaSubscriber.class,
            RedisStoreException.class)) {
      for (String name : classNames(anchor)) {
        Class<?> c = Class.forName(name, false, anchor.getClassLoader());
        if (Throwable.class.isAssignableFrom(c) && !NOT_THROWN.contains(name)) {
          throwables.add(c);
        }
      }
    }

    assertThat(throwables)
        .as("the scan found the listed exceptions")
        .containsAll(PUBLIC_EXCEPTIONS);
    assertThat(throwables).allSatisfy(c -> assertThat(PostboxException.class).isAssignableFrom(c));
    assertThat(throwables.stream().filter(c -> Modifier.isPublic(c.getModifiers())))
        .as("a new public exception is added to PUBLIC_EXCEPTIONS")
        .containsExactlyInAnyOrderElementsOf(PUBLIC_EXCEPTIONS);
  }

  /** The names of the classes in the module (a folder or a jar) that holds {@code anchor}. */
  private static List<String> classNames(Class<?> anchor) throws Exception {
    Path location = location(anchor);
    if (Files.isDirectory(location)) {
      return classNamesUnder(location);
    }
    try (FileSystem jar = FileSystems.newFileSystem(location)) {
      return classNamesUnder(jar.getPath("/"));
    }
  }

  private static Path location(Class<?> anchor) throws URISyntaxException {
    return Path.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
  }

  private static List<String> classNamesUnder(Path root) throws Exception {
    try (Stream<Path> files = Files.walk(root)) {
      return files
          .map(p -> root.relativize(p).toString().replace('\\', '/'))
          .filter(n -> n.endsWith(".class") && n.startsWith("dev/postbox/"))
          .filter(n -> !n.endsWith("module-info.class") && !n.endsWith("package-info.class"))
          .map(n -> n.substring(0, n.length() - ".class".length()).replace('/', '.'))
          .toList();
    }
  }
}
