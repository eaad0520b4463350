package dev.postbox.cli;

import dev.postbox.admin.DeadLetterFilter;
import dev.postbox.admin.PageRequest;
import dev.postbox.core.spi.DeadLetterStore.Status;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Optional;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** The dead-letter filters and paging of {@code dlq list} and {@code dlq groups}. */
final class FilterOptions {

  @Spec(Spec.Target.MIXEE)
  CommandSpec command;

  @Option(names = "--consumer", description = "Only this consumer (subscription).")
  String consumer;

  @Option(names = "--topic", description = "Only this origin topic.")
  String topic;

  @Option(names = "--type", description = "Only this message type.")
  String type;

  @Option(names = "--key", description = "Only this record key.")
  String key;

  @Option(names = "--tenant", description = "Only this tenant.")
  String tenant;

  @Option(names = "--error-class", description = "Only this exception class (full name).")
  String errorClass;

  @Option(names = "--group", description = "Only this failure group (fingerprint).")
  String group;

  @Option(
      names = "--message-id",
      description = "Only the letters of this message id (a UUID), for every consumer.")
  String messageId;

  @Option(
      names = "--status",
      defaultValue = "PENDING",
      description = "PENDING (default), REPLAYED, DISCARDED or ALL.")
  String status;

  @Option(
      names = "--since",
      description = "First failure at or after: an ISO instant, or an age such as 30m, 2h, 7d.")
  String since;

  @Option(names = "--until", description = "First failure before: an ISO instant or an age.")
  String until;

  @Option(
      names = "--limit",
      defaultValue = "50",
      description = "Items per page (1 to 1000, default ${DEFAULT-VALUE}).")
  int limit;

  @Option(names = "--after", description = "The cursor printed under the previous page.")
  String after;

  DeadLetterFilter filter() {
    return DeadLetterFilter.builder()
        .consumer(consumer)
        .topic(topic)
        .type(type)
        .key(key)
        .tenant(tenant)
        .errorClass(errorClass)
        .fingerprint(group)
        .messageId(messageId(messageId))
        .status(status(status))
        .from(time(since, "--since"))
        .to(time(until, "--until"))
        .build();
  }

  PageRequest page() {
    if (limit < 1 || limit > PageRequest.MAX_LIMIT) {
      throw new CommandLine.ParameterException(
          command.commandLine(), "--limit must be between 1 and " + PageRequest.MAX_LIMIT);
    }
    return new PageRequest(limit, Optional.ofNullable(after));
  }

  private java.util.UUID messageId(String s) {
    if (s == null || s.isBlank()) {
      return null;
    }
    try {
      return java.util.UUID.fromString(s.trim());
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(
          command.commandLine(), "--message-id is not a UUID: " + s);
    }
  }

  private Status status(String s) {
    if (s == null || s.equalsIgnoreCase("ALL")) {
      return null;
    }
    try {
      return Status.valueOf(s.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(
          command.commandLine(), "--status must be PENDING, REPLAYED, DISCARDED or ALL: " + s);
    }
  }

  private Instant time(String s, String option) {
    return s == null ? null : parseTime(s, option, command.commandLine());
  }

  /** An ISO instant, or an age ({@code 30s}, {@code 30m}, {@code 2h}, {@code 7d}) before now. */
  static Instant parseTime(String s, String option, CommandLine cli) {
    try {
      if (s.matches("[0-9]+[smhd]")) {
        long n = Long.parseLong(s.substring(0, s.length() - 1));
        Duration d =
            switch (s.charAt(s.length() - 1)) {
              case 's' -> Duration.ofSeconds(n);
              case 'm' -> Duration.ofMinutes(n);
              case 'h' -> Duration.ofHours(n);
              default -> Duration.ofDays(n);
            };
        return java.time.Clock.systemUTC().instant().minus(d);
      }
      return Instant.parse(s);
    } catch (DateTimeParseException | ArithmeticException e) {
      throw new CommandLine.ParameterException(
          cli, option + " must be an ISO instant (2026-12-01T10:00:00Z) or an age (2h): " + s);
    }
  }
}
