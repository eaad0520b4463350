package dev.postbox.console;

import java.io.PrintStream;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetails;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;

/**
 * The console's accounts from its settings. Passwords are kept only encoded (the {@link
 * PasswordEncoder}, bcrypt by default); a password given already encoded ({@code {bcrypt}...}) is
 * kept as it is. Without an admin password the console refuses to start, unless it is told to
 * generate a one-time password, which it prints once.
 */
final class ConsoleUsers {

  static final String NO_ADMIN =
      "postbox console: no admin credential configured. Set POSTBOX_CONSOLE_ADMIN_PASSWORD (or"
          + " postbox.console.admin.password), or start with --generate-password for a one-time"
          + " password printed once.";

  private ConsoleUsers() {}

  static InMemoryUserDetailsManager from(
      ConsoleProperties settings, PasswordEncoder encoder, PrintStream out) {
    ConsoleProperties.Admin admin = settings.getAdmin();
    String adminPassword = admin.getPassword();
    if (adminPassword == null || adminPassword.isBlank()) {
      if (!admin.isGeneratePassword()) {
        throw new IllegalStateException(NO_ADMIN);
      }
      adminPassword = oneTimePassword();
      out.println(
          "postbox console: one-time password of user '"
              + admin.getUsername()
              + "' (shown once, kept only hashed): "
              + adminPassword);
      out.flush();
    }
    List<UserDetails> users = new ArrayList<>();
    users.add(
        user(
            admin.getUsername(),
            adminPassword,
            Role.ADMIN,
            settings.reveals(Role.ADMIN, admin.getReveal()),
            encoder));
    for (Map.Entry<String, ConsoleProperties.User> e : settings.getUsers().entrySet()) {
      String password = e.getValue().getPassword();
      if (password == null || password.isBlank()) {
        throw new IllegalStateException(
            "postbox console: user '" + e.getKey() + "' has no password");
      }
      Role role = e.getValue().getRole();
      users.add(
          user(
              e.getKey(),
              password,
              role,
              settings.reveals(role, e.getValue().getReveal()),
              encoder));
    }
    return new InMemoryUserDetailsManager(users);
  }

  private static UserDetails user(
      String name, String password, Role role, boolean reveals, PasswordEncoder encoder) {
    String stored = password.startsWith("{") ? password : encoder.encode(password);
    List<String> authorities = new ArrayList<>(List.of("ROLE_" + role.name()));
    if (reveals) {
      authorities.add(Masking.REVEAL);
    }
    return User.withUsername(name)
        .password(stored)
        .authorities(authorities.toArray(String[]::new))
        .build();
  }

  private static String oneTimePassword() {
    byte[] b = new byte[18];
    new SecureRandom().nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }
}
