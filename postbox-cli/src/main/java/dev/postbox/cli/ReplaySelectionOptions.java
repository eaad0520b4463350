package dev.postbox.cli;

import dev.postbox.admin.DeadLetterFilter;
import dev.postbox.admin.ReplaySelection;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * What {@code dlq replay-job preview|start} covers: one letter (ID), or the PENDING letters of a
 * failure group and/or the filters {@code dlq list} has.
 */
final class ReplaySelectionOptions {

  @Spec(Spec.Target.MIXEE)
  CommandSpec command;

  @Parameters(index = "0", arity = "0..1", paramLabel = "ID", description = "One dead letter.")
  Long id;

  @Option(names = "--group", description = "The PENDING letters of this failure group.")
  String group;

  @Option(names = "--consumer", description = "Only this consumer's letters.")
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

  @Option(names = "--since", description = "First failure at or after: ISO instant or age (2h).")
  String since;

  @Option(names = "--until", description = "First failure before: ISO instant or age.")
  String until;

  /**
   * The selection; a usage error when it names a letter and filters, or nothing at all (every
   * pending letter must be asked for with a filter).
   */
  ReplaySelection selection() {
    CommandLine cli = command.commandLine();
    boolean filtered =
        group != null
            || consumer != null
            || topic != null
            || type != null
            || key != null
            || tenant != null
            || errorClass != null
            || since != null
            || until != null;
    if (id != null && filtered) {
      throw new CommandLine.ParameterException(cli, "name a letter (ID) or filters, not both");
    }
    if (id != null) {
      return ReplaySelection.letter(id);
    }
    if (!filtered) {
      throw new CommandLine.ParameterException(
          cli, "name a letter (ID), a --group, or filters (--consumer, --topic, ...)");
    }
    return ReplaySelection.matching(
        DeadLetterFilter.builder()
            .fingerprint(group)
            .consumer(consumer)
            .topic(topic)
            .type(type)
            .key(key)
            .tenant(tenant)
            .errorClass(errorClass)
            .from(since == null ? null : FilterOptions.parseTime(since, "--since", cli))
            .to(until == null ? null : FilterOptions.parseTime(until, "--until", cli))
            .build());
  }
}
