package dev.postbox.console;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.springframework.boot.SpringApplication;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./postbox console}: starts the web console on a database, with the same connection options
 * as the other operations commands. The admin password comes from the environment ({@code
 * POSTBOX_CONSOLE_ADMIN_PASSWORD}), never from the command line.
 */
@Command(
    name = "console",
    mixinStandardHelpOptions = true,
    description = {
      "Starts the Postbox web console (dashboard, dead letters, parked and blocked keys, trace,"
          + " audit) on http://127.0.0.1:8080 by default.",
      "Login: user 'admin' with $POSTBOX_CONSOLE_ADMIN_PASSWORD; without it the console refuses to"
          + " start unless --generate-password (a one-time password printed once). More users:"
          + " postbox.console.users.<name>.password/.role (VIEWER, OPERATOR, ADMIN) in"
          + " application.properties or the environment.",
      "Masking: error messages, headers and stack traces are masked, payloads shown only by an"
          + " audited reveal, except for the roles of postbox.console.reveal-roles (default ADMIN)"
          + " or users with postbox.console.users.<name>.reveal=true.",
      "Single sign-on (optional, beside the local users): --oidc-issuer-uri, --oidc-client-id,"
          + " $POSTBOX_CONSOLE_OIDC_CLIENT_SECRET and --oidc-role ROLE=groups (the token's"
          + " --oidc-roles-claim, default groups).",
      "Any Spring Boot or console property may be given as --name=value (for example"
          + " --server.servlet.session.cookie.secure=true behind TLS)."
    })
public final class ConsoleCommand implements Callable<Integer> {

  @Option(
      names = "--pg-url",
      defaultValue = "${env:POSTBOX_PG_URL}",
      description = "The database, jdbc:postgresql://host:5432/db (default: $POSTBOX_PG_URL).")
  String pgUrl;

  @Option(
      names = "--schema",
      defaultValue = "${env:POSTBOX_PG_SCHEMA}",
      description = "Schema of the postbox_* tables (default: $POSTBOX_PG_SCHEMA).")
  String schema;

  @Option(
      names = "--user",
      defaultValue = "${env:POSTBOX_PG_USER}",
      description = "Database user (default: $POSTBOX_PG_USER, else from the URL).")
  String user;

  @Option(
      names = "--password-env",
      description =
          "Name of the environment variable holding the database password (default:"
              + " POSTBOX_PG_PASSWORD when set).")
  String passwordEnv;

  @Option(
      names = "--port",
      defaultValue = "8080",
      description = "HTTP port (default: ${DEFAULT-VALUE}).")
  int port;

  @Option(
      names = "--bind",
      defaultValue = "127.0.0.1",
      description = "Address to listen on (default: ${DEFAULT-VALUE}; put TLS in front otherwise).")
  String bind;

  @Option(
      names = "--generate-password",
      description =
          "Without $POSTBOX_CONSOLE_ADMIN_PASSWORD: a one-time admin password, printed once.")
  boolean generatePassword;

  @Option(
      names = "--replay-rate",
      description = "Replays and edits per second, all users together.")
  Double replayRate;

  @Option(
      names = "--bootstrap-servers",
      description =
          "Kafka brokers, to show the consumer groups' lag as age on the dashboard (default:"
              + " $POSTBOX_KAFKA_BOOTSTRAP; with --group).")
  String bootstrapServers;

  @Option(
      names = "--group",
      split = ",",
      description = "Consumer groups whose Kafka lag the dashboard shows (with a bootstrap).")
  java.util.List<String> groups = java.util.List.of();

  @Option(
      names = "--rabbitmq-uri",
      description =
          "RabbitMQ broker, amqp://user:pass@host:5672/vhost, to show the subscriptions' shard"
              + " queues with their lag as age on the dashboard (default: $POSTBOX_RABBITMQ_URL;"
              + " with --rabbitmq-subscription).")
  String rabbitmqUri;

  @Option(
      names = "--rabbitmq-subscription",
      split = ",",
      description =
          "RabbitMQ subscriptions whose queues the dashboard shows, each subscription:shards:topic"
              + " (for example shipping:4:orders; one entry per topic; with a RabbitMQ URI).")
  java.util.List<String> rabbitmqSubscriptions = java.util.List.of();

  @Option(
      names = "--demo",
      description =
          "The console on an embedded PostgreSQL with a sample shop's failures (dead letters, a"
              + " parked key, a blocked outbox row); a one-time admin password unless"
              + " $POSTBOX_CONSOLE_ADMIN_PASSWORD is set.")
  boolean demo;

  @Option(
      names = "--oidc-issuer-uri",
      description =
          "Single sign-on beside the local users: the OpenID Connect provider's issuer URL"
              + " (postbox.console.oidc.issuer-uri); the client secret comes from"
              + " $POSTBOX_CONSOLE_OIDC_CLIENT_SECRET.")
  String oidcIssuerUri;

  @Option(names = "--oidc-client-id", description = "The console's client id at the provider.")
  String oidcClientId;

  @Option(
      names = "--oidc-client-secret-env",
      description =
          "Name of the environment variable holding the client secret (default:"
              + " POSTBOX_CONSOLE_OIDC_CLIENT_SECRET).")
  String oidcClientSecretEnv;

  @Option(
      names = "--oidc-roles-claim",
      description = "The token claim holding the user's groups (default: groups).")
  String oidcRolesClaim;

  @Option(
      names = "--oidc-role",
      paramLabel = "ROLE=VALUES",
      description =
          "A console role (VIEWER, OPERATOR, ADMIN) for the users whose claim holds one of these"
              + " comma-separated values, e.g. --oidc-role ADMIN=postbox-admins; repeatable.")
  Map<Role, String> oidcRoles = new LinkedHashMap<>();

  /**
   * Spring Boot properties as {@code --name=value} (for example {@code
   * --server.servlet.session.cookie.secure=true} behind TLS), passed on to the application as
   * given.
   */
  @CommandLine.Unmatched List<String> springProperties = new java.util.ArrayList<>();

  private static final java.util.regex.Pattern SPRING_PROPERTY =
      java.util.regex.Pattern.compile("--[a-zA-Z][a-zA-Z0-9_.\\[\\]-]*=.*");

  /** The arguments that are not Spring Boot properties ({@code --name=value}): usage errors. */
  List<String> unknownArguments() {
    return springProperties.stream().filter(a -> !SPRING_PROPERTY.matcher(a).matches()).toList();
  }

  /** The environment (a map in tests). */
  private final java.util.function.Function<String, String> env;

  /** The command on the process's environment. */
  public ConsoleCommand() {
    this(System::getenv);
  }

  ConsoleCommand(java.util.function.Function<String, String> env) {
    this.env = env;
  }

  public static void main(String[] args) {
    int code = new CommandLine(new ConsoleCommand()).execute(args);
    if (code != 0) {
      System.exit(code);
    }
  }

  /** The single sign-on options as properties; false (and why) when the secret is missing. */
  boolean oidc(Map<String, Object> props) {
    if (oidcIssuerUri != null) {
      props.put("postbox.console.oidc.issuer-uri", oidcIssuerUri);
    }
    if (oidcClientId != null) {
      props.put("postbox.console.oidc.client-id", oidcClientId);
    }
    if (oidcRolesClaim != null) {
      props.put("postbox.console.oidc.roles-claim", oidcRolesClaim);
    }
    oidcRoles.forEach((role, values) ->
        props.put("postbox.console.oidc.roles." + role.name().toLowerCase(), values));
    if (oidcClientSecretEnv != null) {
      String secret = env.apply(oidcClientSecretEnv);
      if (secret == null) {
        System.err.println(
            "postbox console: environment variable "
                + oidcClientSecretEnv
                + " (--oidc-client-secret-env) is not set");
        return false;
      }
      // passed in-process to the application, as the database password: never on a command line
      props.put("postbox.console.oidc.client-secret", secret);
    }
    return true;
  }

  @Override
  public Integer call() {
    if (!unknownArguments().isEmpty()) {
      System.err.println(
          "postbox console: unknown option "
              + unknownArguments().get(0)
              + " (see --help; Spring Boot properties are given as --name=value)");
      return 2;
    }
    Map<String, Object> props = new LinkedHashMap<>();
    if (demo) {
      DemoDatabase db = DemoDatabase.start();
      Runtime.getRuntime().addShutdownHook(new Thread(db::close, "postbox-console-demo-db"));
      pgUrl = db.jdbcUrl();
      schema = db.schema();
      user = null;
      passwordEnv = null;
      if (env.apply("POSTBOX_CONSOLE_ADMIN_PASSWORD") == null) {
        generatePassword = true;
      }
      System.out.println(
          "postbox console: demo database (embedded PostgreSQL, schema "
              + schema
              + ") with sample failures");
    }
    String adminPassword = env.apply("POSTBOX_CONSOLE_ADMIN_PASSWORD");
    if ((adminPassword == null || adminPassword.isBlank()) && !generatePassword) {
      // refuse before anything starts (the application checks again: ConsoleUsers)
      System.err.println(ConsoleUsers.NO_ADMIN);
      return 2;
    }
    if (pgUrl != null) {
      props.put("postbox.console.db.url", pgUrl);
    }
    if (schema != null) {
      props.put("postbox.console.db.schema", schema);
    }
    if (user != null) {
      props.put("postbox.console.db.user", user);
    }
    String variable =
        demo
            ? null
            : passwordEnv != null
                ? passwordEnv
                : (env.apply("POSTBOX_PG_PASSWORD") != null ? "POSTBOX_PG_PASSWORD" : null);
    if (variable != null) {
      String pw = env.apply(variable);
      if (pw == null) {
        System.err.println("postbox console: environment variable " + variable + " is not set");
        return 2;
      }
      props.put("postbox.console.db.password", pw);
    }
    props.put("server.port", port);
    props.put("server.address", bind);
    if (generatePassword) {
      props.put("postbox.console.admin.generate-password", true);
    }
    if (replayRate != null) {
      props.put("postbox.console.replay-rate", replayRate);
    }
    String bootstrap =
        bootstrapServers != null ? bootstrapServers : env.apply("POSTBOX_KAFKA_BOOTSTRAP");
    if (bootstrap != null && !bootstrap.isBlank() && !groups.isEmpty()) {
      props.put("postbox.console.kafka.bootstrap-servers", bootstrap);
      props.put("postbox.console.kafka.groups", String.join(",", groups));
    }
    String rabbitmq = rabbitmqUri != null ? rabbitmqUri : env.apply("POSTBOX_RABBITMQ_URL");
    if (rabbitmq != null && !rabbitmq.isBlank() && !rabbitmqSubscriptions.isEmpty()) {
      props.put("postbox.console.rabbitmq.uri", rabbitmq);
      props.put("postbox.console.rabbitmq.subscriptions", String.join(",", rabbitmqSubscriptions));
    }
    if (!oidc(props)) {
      return 2;
    }
    String[] args =
        props.entrySet().stream()
            .map(e -> "--" + e.getKey() + "=" + e.getValue())
            .toArray(String[]::new);
    args =
        java.util.stream.Stream.concat(java.util.Arrays.stream(args), springProperties.stream())
            .toArray(String[]::new);
    new SpringApplication(ConsoleApplication.class).run(args);
    System.out.println("postbox console: http://" + bind + ":" + port + "/");
    return 0;
  }
}
