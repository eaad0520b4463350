package dev.postbox.console;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The console's settings ({@code postbox.console.*}; environment variables such as {@code
 * POSTBOX_CONSOLE_ADMIN_PASSWORD} bind by Spring Boot's relaxed rules).
 */
@ConfigurationProperties("postbox.console")
public class ConsoleProperties {

  private final Db db = new Db();
  private final Admin admin = new Admin();
  private final Map<String, User> users = new LinkedHashMap<>();
  private final Login login = new Login();
  private final Kafka kafka = new Kafka();
  private final Rabbitmq rabbitmq = new Rabbitmq();
  private final ReplayJobs replayJobs = new ReplayJobs();
  private final ConsoleOidcProperties oidc = new ConsoleOidcProperties();
  private double replayRate = dev.postbox.jdbc.Replayer.DEFAULT_RATE_PER_SECOND;
  private java.time.Duration retryUnreachableAfter = java.time.Duration.ofSeconds(5);
  private java.util.List<Role> revealRoles =
      new java.util.ArrayList<>(java.util.List.of(Role.ADMIN));

  /**
   * The roles whose users hold the reveal permission ({@link Masking}): they see error messages,
   * headers and stack traces unmasked and may reveal a payload (audited). Exactly these roles (no
   * hierarchy): ADMIN by default. A user's own {@code reveal} setting overrides it.
   */
  public java.util.List<Role> getRevealRoles() {
    return revealRoles;
  }

  public void setRevealRoles(java.util.List<Role> revealRoles) {
    this.revealRoles = revealRoles;
  }

  /** Whether a user of {@code role} with the setting {@code own} (null: by role) may reveal. */
  boolean reveals(Role role, Boolean own) {
    return own != null ? own : revealRoles.contains(role);
  }

  /**
   * How long the console answers from what it knows, without trying, after the database or Kafka
   * was found unreachable (then the next request tries again).
   */
  public java.time.Duration getRetryUnreachableAfter() {
    return retryUnreachableAfter;
  }

  public void setRetryUnreachableAfter(java.time.Duration retryUnreachableAfter) {
    this.retryUnreachableAfter = retryUnreachableAfter;
  }

  public Db getDb() {
    return db;
  }

  public Admin getAdmin() {
    return admin;
  }

  /** More users by name, each with a password and a role (VIEWER, OPERATOR or ADMIN). */
  public Map<String, User> getUsers() {
    return users;
  }

  public Login getLogin() {
    return login;
  }

  /** Where the dashboard reads the consumer groups' lag as age (optional). */
  public Kafka getKafka() {
    return kafka;
  }

  /** Where the dashboard reads the RabbitMQ subscriptions' queue lag as age (optional). */
  public Rabbitmq getRabbitmq() {
    return rabbitmq;
  }

  /** Optional single sign-on with an OpenID Connect provider, beside the local users. */
  public ConsoleOidcProperties getOidc() {
    return oidc;
  }

  /** Bulk replays as background jobs. */
  public ReplayJobs getReplayJobs() {
    return replayJobs;
  }

  /**
   * Bulk replays as background jobs ({@code postbox.console.replay-jobs.*}): the typed
   * confirmation's threshold, and whether this console works the RUNNING jobs.
   */
  public static class ReplayJobs {
    private int confirmAbove = dev.postbox.admin.PostboxAdmin.DEFAULT_REPLAY_JOB_CONFIRM_ABOVE;
    private boolean run = true;
    private java.time.Duration pollInterval = java.time.Duration.ofSeconds(1);

    /** Jobs of more letters than this need their count typed to start (default 100). */
    public int getConfirmAbove() {
      return confirmAbove;
    }

    public void setConfirmAbove(int confirmAbove) {
      this.confirmAbove = confirmAbove;
    }

    /** Whether this console works the RUNNING jobs in the background (default true). */
    public boolean isRun() {
      return run;
    }

    public void setRun(boolean run) {
      this.run = run;
    }

    /** How often an idle console looks for a RUNNING job to work (default 1 s). */
    public java.time.Duration getPollInterval() {
      return pollInterval;
    }

    public void setPollInterval(java.time.Duration pollInterval) {
      this.pollInterval = pollInterval;
    }
  }

  /** Kafka brokers and the consumer groups whose lag the dashboard shows. */
  public static class Kafka {
    private String bootstrapServers;
    private java.util.List<String> groups = new java.util.ArrayList<>();
    private java.time.Duration timeout = java.time.Duration.ofSeconds(1);
    private java.time.Duration clientTimeout = java.time.Duration.ofSeconds(10);

    /** How long a page waits for Kafka's lag (default 1 s). */
    public java.time.Duration getTimeout() {
      return timeout;
    }

    public void setTimeout(java.time.Duration timeout) {
      this.timeout = timeout;
    }

    /**
     * The admin client's request and default API timeouts (default 10 s): how long a reading a page
     * stopped waiting for may go on before it fails; its answer serves the next page.
     */
    public java.time.Duration getClientTimeout() {
      return clientTimeout;
    }

    public void setClientTimeout(java.time.Duration clientTimeout) {
      this.clientTimeout = clientTimeout;
    }

    public String getBootstrapServers() {
      return bootstrapServers;
    }

    public void setBootstrapServers(String bootstrapServers) {
      this.bootstrapServers = bootstrapServers;
    }

    public java.util.List<String> getGroups() {
      return groups;
    }

    public void setGroups(java.util.List<String> groups) {
      this.groups = groups;
    }

    /** Whether both the brokers and at least one group are given. */
    boolean configured() {
      return bootstrapServers != null && !bootstrapServers.isBlank() && !groups.isEmpty();
    }
  }

  /**
   * A RabbitMQ broker and the subscriptions whose shard queues the dashboard shows ({@code
   * postbox.console.rabbitmq.*}): each entry of {@code subscriptions} is {@code
   * subscription:shards:topic} (one topic; a subscription of several topics is one entry per
   * topic).
   */
  public static class Rabbitmq {
    private String uri;
    private java.util.List<String> subscriptions = new java.util.ArrayList<>();
    private java.time.Duration timeout = java.time.Duration.ofSeconds(1);
    private java.time.Duration clientTimeout = java.time.Duration.ofSeconds(10);
    private java.time.Duration stalledAfter =
        dev.postbox.rabbitmq.RabbitLagProbe.DEFAULT_STALLED_AFTER;

    /** The broker, {@code amqp://user:pass@host:5672/vhost}. */
    public String getUri() {
      return uri;
    }

    public void setUri(String uri) {
      this.uri = uri;
    }

    /** The subscriptions watched, each {@code subscription:shards:topic}. */
    public java.util.List<String> getSubscriptions() {
      return subscriptions;
    }

    public void setSubscriptions(java.util.List<String> subscriptions) {
      this.subscriptions = subscriptions;
    }

    /** How long a page waits for RabbitMQ's queue lag (default 1 s). */
    public java.time.Duration getTimeout() {
      return timeout;
    }

    public void setTimeout(java.time.Duration timeout) {
      this.timeout = timeout;
    }

    /**
     * The client's TCP connection timeout (default 10 s): how long a reading a page stopped waiting
     * for may try to connect before it fails; its answer serves the next page.
     */
    public java.time.Duration getClientTimeout() {
      return clientTimeout;
    }

    public void setClientTimeout(java.time.Duration clientTimeout) {
      this.clientTimeout = clientTimeout;
    }

    /**
     * How old an unfinished message may get before its queue reads as stalled (default 60 s; the
     * lag probe's {@code stalledAfter}).
     */
    public java.time.Duration getStalledAfter() {
      return stalledAfter;
    }

    public void setStalledAfter(java.time.Duration stalledAfter) {
      this.stalledAfter = stalledAfter;
    }
  }

  /** Replays and edits per second, all users together. */
  public double getReplayRate() {
    return replayRate;
  }

  public void setReplayRate(double replayRate) {
    this.replayRate = replayRate;
  }

  /** The database of the postbox_* tables. */
  public static class Db {
    private String url;
    private String user;
    private String password;
    private String schema;
    private java.time.Duration connectionTimeout = java.time.Duration.ofSeconds(1);

    /** HikariCP's connection timeout: how long a page waits for a database that does not answer. */
    public java.time.Duration getConnectionTimeout() {
      return connectionTimeout;
    }

    public void setConnectionTimeout(java.time.Duration connectionTimeout) {
      this.connectionTimeout = connectionTimeout;
    }

    public String getUrl() {
      return url;
    }

    public void setUrl(String url) {
      this.url = url;
    }

    public String getUser() {
      return user;
    }

    public void setUser(String user) {
      this.user = user;
    }

    public String getPassword() {
      return password;
    }

    public void setPassword(String password) {
      this.password = password;
    }

    public String getSchema() {
      return schema;
    }

    public void setSchema(String schema) {
      this.schema = schema;
    }
  }

  /**
   * The admin account: a password (plain, or already encoded as {@code {bcrypt}...}), or none and
   * {@code generate-password} for a one-time password printed once at start.
   */
  public static class Admin {
    private String username = "admin";
    private String password;
    private boolean generatePassword;
    private Boolean reveal;

    /** Whether the admin holds the reveal permission; unset: by {@code reveal-roles}. */
    public Boolean getReveal() {
      return reveal;
    }

    public void setReveal(Boolean reveal) {
      this.reveal = reveal;
    }

    public String getUsername() {
      return username;
    }

    public void setUsername(String username) {
      this.username = username;
    }

    public String getPassword() {
      return password;
    }

    public void setPassword(String password) {
      this.password = password;
    }

    public boolean isGeneratePassword() {
      return generatePassword;
    }

    public void setGeneratePassword(boolean generatePassword) {
      this.generatePassword = generatePassword;
    }
  }

  /** One more user. */
  public static class User {
    private String password;
    private Role role = Role.VIEWER;
    private Boolean reveal;

    /** Whether the user holds the reveal permission; unset: by {@code reveal-roles}. */
    public Boolean getReveal() {
      return reveal;
    }

    public void setReveal(Boolean reveal) {
      this.reveal = reveal;
    }

    public String getPassword() {
      return password;
    }

    public void setPassword(String password) {
      this.password = password;
    }

    public Role getRole() {
      return role;
    }

    public void setRole(Role role) {
      this.role = role;
    }
  }

  /**
   * Login back-off ({@link LoginThrottle}): failed attempts allowed per account and per (address,
   * account) before the back-off starts ({@code attempts-per-minute}, its historical name), the
   * first wait ({@code backoff}, doubled at each further failure) and the longest ({@code
   * max-backoff}, also how long failures are remembered).
   */
  public static class Login {
    private int attemptsPerMinute = 5;
    private java.time.Duration backoff = java.time.Duration.ofSeconds(1);
    private java.time.Duration maxBackoff = java.time.Duration.ofMinutes(15);

    public java.time.Duration getBackoff() {
      return backoff;
    }

    public void setBackoff(java.time.Duration backoff) {
      this.backoff = backoff;
    }

    public java.time.Duration getMaxBackoff() {
      return maxBackoff;
    }

    public void setMaxBackoff(java.time.Duration maxBackoff) {
      this.maxBackoff = maxBackoff;
    }

    public int getAttemptsPerMinute() {
      return attemptsPerMinute;
    }

    public void setAttemptsPerMinute(int attemptsPerMinute) {
      this.attemptsPerMinute = attemptsPerMinute;
    }
  }
}
