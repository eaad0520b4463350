package dev.postbox.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The headers of the copy a subscriber publishes to the broker's dead-letter exchange: the
 * message's own headers as received, RabbitMQ's {@code x-death} record of the wait-queue hops (if
 * it went through any), and why it was given up, under the names the Kafka dead-letter topics use
 * where they have one:
 *
 * <ul>
 *   <li>{@value #ERROR}: the error as {@code class: message}, made header-safe ({@link #safe}).
 *   <li>{@value #ERROR_CLASS}: the error's class name.
 *   <li>{@value #ATTEMPTS}: the attempts made in all (in-place and wait-queue ones), as the
 *       dead-letter store counts them.
 *   <li>{@value #SUBSCRIPTION}: the consumer (subscription) that gave up.
 *   <li>{@value #FIRST_FAILURE}: when it failed first (ISO-8601).
 *   <li>{@value #ORIGIN}: the shard queue it was delivered from.
 * </ul>
 *
 * Our retry tier header ({@value WaitQueues#TIER}) is left out, so a copy shovelled back to the
 * topic starts with a full retry budget. Stateless.
 */
public final class DeadLetterCopy {

  /** The error, {@code class: message}, header-safe; as on the Kafka dead-letter topics. */
  public static final String ERROR = WaitQueues.ERROR;

  /** The error's class name. */
  public static final String ERROR_CLASS = "pb_retry_error_class";

  /** The attempts made in all, as the dead-letter store counts them. */
  public static final String ATTEMPTS = "pb_retry_attempts";

  /** The subscription that gave up; as on the Kafka dead-letter topics. */
  public static final String SUBSCRIPTION = "pb_retry_subscription";

  /** When the message failed first (ISO-8601); as on the Kafka dead-letter topics. */
  public static final String FIRST_FAILURE = WaitQueues.FIRST_FAILURE;

  /** The shard queue the message was delivered from. */
  public static final String ORIGIN = "pb_retry_origin";

  /** The longest error text kept, in characters (as on the Kafka retry and dead-letter topics). */
  public static final int MAX_ERROR = 2_000;

  private DeadLetterCopy() {}

  /** The properties of the copy of a delivery received with {@code received}. */
  public static AMQP.BasicProperties properties(
      AMQP.BasicProperties received, String queue, NewDeadLetter letter) {
    Map<String, Object> headers = new LinkedHashMap<>();
    if (received.getHeaders() != null) {
      received
          .getHeaders()
          .forEach((k, v) -> {
            if (!k.toLowerCase(Locale.ROOT).startsWith("pb_retry_")) {
              headers.put(k, v); // x-death and x-first/last-death-* kept: the broker's hops
            }
          });
    }
    String message = letter.errorMessage();
    String error =
        message == null || message.equals("null")
            ? letter.errorClass()
            : letter.errorClass() + ": " + message;
    headers.put(ERROR, safe(error, MAX_ERROR));
    headers.put(ERROR_CLASS, safe(letter.errorClass(), MAX_ERROR));
    headers.put(ATTEMPTS, letter.attempts());
    headers.put(SUBSCRIPTION, safe(letter.consumer(), MAX_ERROR));
    headers.put(FIRST_FAILURE, letter.firstFailure().toString());
    headers.put(ORIGIN, queue);
    return received.builder().headers(headers).build();
  }

  /**
   * {@code text} made safe for a header read by any client or tool: control characters (line
   * breaks, tabs, NUL) become spaces, a lone surrogate becomes {@code ?}, and it is cut to {@code
   * max} characters (never inside a surrogate pair), ending in {@code ...} when cut.
   */
  public static String safe(String text, int max) {
    if (text == null) {
      return "";
    }
    StringBuilder b = new StringBuilder(text.length());
    text.codePoints()
        .forEach(cp -> {
          if (Character.isISOControl(cp) || cp == 0x2028 || cp == 0x2029) {
            b.append(' ');
          } else if (Character.isSurrogate((char) cp) && Character.charCount(cp) == 1) {
            b.append('?');
          } else {
            b.appendCodePoint(cp);
          }
        });
    if (b.length() <= max) {
      return b.toString();
    }
    int end = Math.max(0, max - 3);
    if (end > 0 && Character.isHighSurrogate(b.charAt(end - 1))) {
      end--;
    }
    return b.substring(0, end) + "...";
  }
}
