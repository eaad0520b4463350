package dev.postbox.testkit.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Erlang run on a private RabbitMQ node through {@code rabbitmqctl eval} (the CLI next to the
 * node's start script, with the node's {@code HOME} for its Erlang cookie): what an operator would
 * type, for the test kit. A call takes a few seconds (the CLI boots an Erlang VM). Stateless.
 */
public final class RabbitCtl {

  /**
   * The local quorum queues whose Ra server does not answer with a leader within a second get an
   * election triggered; prints how many there were.
   */
  public static final String ELECT_LEADERS =
      "L = [Id || Q <- rabbit_amqqueue:list(), amqqueue:get_type(Q) =:= rabbit_quorum_queue,"
          + " Id <- [amqqueue:get_pid(Q)], case catch ra:members(Id, 1000) of"
          + " {ok, _, _} -> false; _ -> true end],"
          + " [catch ra:trigger_election(Id) || Id <- L], length(L).";

  private RabbitCtl() {}

  /**
   * Closes (320 {@code CONNECTION_FORCED}) every connection whose client-provided name starts with
   * {@code namePrefix} (letters, digits, {@code . _ -}); prints how many.
   */
  public static String closeConnections(String namePrefix) {
    if (!namePrefix.matches("[A-Za-z0-9._-]+")) {
      throw new IllegalArgumentException("a name prefix of letters, digits, '.', '_', '-'");
    }
    return "L = [P || P <- rabbit_networking:connections(),"
        + " case lists:keyfind(<<\"connection_name\">>, 1,"
        + " element(2, hd(rabbit_networking:connection_info(P, [client_properties])))) of"
        + " {_, _, Name} -> lists:prefix(\""
        + namePrefix
        + "\", binary_to_list(Name)); _ -> false end],"
        + " [rabbit_networking:close_connection(P, \"closed by the test kit\") || P <- L],"
        + " length(L).";
  }

  /**
   * Prints the names of the nodes holding the connections whose client-provided name starts with
   * {@code namePrefix} (letters, digits, {@code . _ -}), comma-separated, in double quotes.
   */
  public static String connectionNodes(String namePrefix) {
    if (!namePrefix.matches("[A-Za-z0-9._-]+")) {
      throw new IllegalArgumentException("a name prefix of letters, digits, '.', '_', '-'");
    }
    return "L = [P || P <- rabbit_networking:connections(),"
        + " case lists:keyfind(<<\"connection_name\">>, 1,"
        + " element(2, hd(rabbit_networking:connection_info(P, [client_properties])))) of"
        + " {_, _, Name} -> lists:prefix(\""
        + namePrefix
        + "\", binary_to_list(Name)); _ -> false end],"
        + " string:join([atom_to_list(node(P)) || P <- L], \",\").";
  }

  /**
   * Prints {@code [{key, Value}]}, item {@code key} (such as {@code leader}, {@code members} or
   * {@code online}) of queue {@code queue} in the default vhost as {@code rabbitmqctl list_queues}
   * has it, or {@code not_found}. Run on one node, unlike {@code list_queues}, whose other nodes
   * send their rows to the CLI's own Erlang node (which they cannot reach when the nodes run in
   * their own network namespaces and the CLI in one of them).
   */
  public static String queueInfo(String queue, String key) {
    if (!key.matches("[a-z_]+")) {
      throw new IllegalArgumentException("an info key of lower-case letters and '_': " + key);
    }
    if (!queue.chars().allMatch(c -> c >= 0x20 && c < 0x7f)) {
      throw new IllegalArgumentException("a queue name of printable ASCII characters: " + queue);
    }
    String name = queue.replace("\\", "\\\\").replace("\"", "\\\"");
    return "case rabbit_amqqueue:lookup(rabbit_misc:r(<<\"/\">>, queue, <<\""
        + name
        + "\">>)) of {ok, Q} -> rabbit_amqqueue:info(Q, ["
        + key
        + "]); _ -> not_found end.";
  }

  /**
   * Runs {@code rabbitmqctl -n node eval expr} (the CLI beside {@code script}, {@code HOME} =
   * {@code dir}); its trimmed output.
   */
  public static String eval(Path script, String node, Path dir, String expr)
      throws IOException, InterruptedException {
    return run(script, node, dir, "-q", "eval", expr).output();
  }

  /** What a {@code rabbitmqctl} run printed (standard output and error) and its exit code. */
  public record Result(int exitCode, String output) {
    /** Whether the command succeeded. */
    public boolean ok() {
      return exitCode == 0;
    }
  }

  /**
   * Runs {@code rabbitmqctl -n node args...} (the CLI beside {@code script}, {@code HOME} = {@code
   * dir}, where the Erlang cookie is); its exit code and trimmed output. Gives up after 60 s (exit
   * code -1).
   */
  public static Result run(Path script, String node, Path dir, String... args)
      throws IOException, InterruptedException {
    return run(List.of(), Map.of(), script, node, dir, args);
  }

  /**
   * As {@link #run(Path, String, Path, String...)}, run by {@code launcher} (for example {@code ip
   * netns exec <namespace>}; empty: directly) with {@code env} added to its environment.
   */
  public static Result run(
      List<String> launcher,
      Map<String, String> env,
      Path script,
      String node,
      Path dir,
      String... args)
      throws IOException, InterruptedException {
    Path ctl = script.resolveSibling("rabbitmqctl");
    if (!Files.isExecutable(ctl)) {
      throw new IOException(ctl + " not found");
    }
    List<String> command = new ArrayList<>(launcher);
    command.addAll(List.of(ctl.toString(), "-n", node));
    command.addAll(List.of(args));
    ProcessBuilder pb =
        new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
    pb.environment().put("HOME", dir.toString());
    pb.environment().remove("RABBITMQ_CONF_ENV_FILE");
    pb.environment().putAll(env);
    Process p = pb.start();
    String out;
    try (InputStream in = p.getInputStream()) {
      out = new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
    }
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return new Result(-1, out);
    }
    return new Result(p.exitValue(), out);
  }
}
