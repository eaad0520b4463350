package dev.postbox.console;

import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.PostboxTestContext;
import javax.sql.DataSource;
import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * One schema of the test kit's PostgreSQL per test class, migrated, and the console's settings for
 * it: an admin, an operator and a viewer with known passwords.
 */
final class ConsoleTestDatabase {

  static final String ADMIN_PASSWORD = "admin-secret-1";
  static final String OPERATOR_PASSWORD = "operator-secret-1";
  static final String VIEWER_PASSWORD = "viewer-secret-1";

  private final PostboxTestContext ctx;

  ConsoleTestDatabase(String name) {
    this.ctx = PostboxTestContext.create(name);
    PostboxMigrations.migrate(ctx.dataSource());
  }

  DataSource dataSource() {
    return ctx.dataSource();
  }

  PostboxTestContext context() {
    return ctx;
  }

  void register(DynamicPropertyRegistry registry) {
    registry.add("postbox.console.db.url", ctx::jdbcUrl);
    registry.add("postbox.console.db.schema", ctx::schema);
    registry.add("postbox.console.admin.password", () -> ADMIN_PASSWORD);
    registry.add("postbox.console.users.olivia.password", () -> OPERATOR_PASSWORD);
    registry.add("postbox.console.users.olivia.role", () -> "OPERATOR");
    registry.add("postbox.console.users.victor.password", () -> VIEWER_PASSWORD);
    registry.add("postbox.console.users.victor.role", () -> "VIEWER");
    registry.add("postbox.console.replay-rate", () -> "1000");
  }
}
