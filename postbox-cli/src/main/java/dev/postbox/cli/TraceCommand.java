package dev.postbox.cli;

import dev.postbox.jdbc.MessageTrace;
import dev.postbox.jdbc.MessageTracer;
import java.util.UUID;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code postbox trace MESSAGE_ID --pg-url URL}: what the Postbox tables recorded about one
 * message, in time order. Read-only.
 */
@Command(
    name = "trace",
    mixinStandardHelpOptions = true,
    description = {
      "Prints what the postbox_* tables recorded about one message, oldest first: written to the"
          + " outbox, published (topic, partition, offset), failed and dead-lettered by a consumer,"
          + " parked, replayed or discarded, processed (inbox). Read-only.",
      "Exit code: 0 found, 4 no table knows the message."
    })
final class TraceCommand implements Callable<Integer> {

  @Parameters(index = "0", paramLabel = "MESSAGE_ID", description = "The message id (a UUID).")
  String messageId;

  @Option(
      names = "--pg-url",
      required = true,
      description =
          "The database, for example jdbc:postgresql://localhost:5432/shop (postgresql://... also"
              + " works).")
  String pgUrl;

  @Option(
      names = "--schema",
      description = "Schema of the postbox_* tables (default: the connection's current schema).")
  String schema;

  @Mixin DatabaseLogin login = new DatabaseLogin();

  @Spec CommandSpec spec;

  @Option(names = "--json", description = "Print the trace as JSON.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    UUID id;
    try {
      id = UUID.fromString(messageId);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "MESSAGE_ID must be a UUID, was '" + messageId + "'");
    }
    DataSource ds = login.dataSource(pgUrl);
    MessageTracer tracer =
        schema == null ? MessageTracer.postgres(ds) : MessageTracer.postgres(ds, schema);
    MessageTrace trace = tracer.trace(id);
    if (json) {
      System.out.println(TraceOutput.toJson(trace));
    } else {
      TraceOutput.print(trace, System.out);
    }
    return trace.found() ? 0 : 4;
  }
}
