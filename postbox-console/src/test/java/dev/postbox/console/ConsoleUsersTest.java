package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.security.crypto.factory.PasswordEncoderFactories;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;

/** The accounts: no admin credential, no start; a generated one is printed once, kept hashed. */
class ConsoleUsersTest {

  private final PasswordEncoder encoder =
      PasswordEncoderFactories.createDelegatingPasswordEncoder();

  @Test
  void refusesToStartWithoutAnAdminCredential() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    assertThatThrownBy(() ->
            ConsoleUsers.from(
                new ConsoleProperties(),
                encoder,
                new PrintStream(out, true, StandardCharsets.UTF_8)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("POSTBOX_CONSOLE_ADMIN_PASSWORD");
    assertThat(out.size()).isZero();
  }

  @Test
  void aGeneratedPasswordIsPrintedOnceAndKeptOnlyHashed() {
    ConsoleProperties settings = new ConsoleProperties();
    settings.getAdmin().setGeneratePassword(true);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    InMemoryUserDetailsManager users =
        ConsoleUsers.from(settings, encoder, new PrintStream(out, true, StandardCharsets.UTF_8));
    String printed = out.toString(StandardCharsets.UTF_8).trim();
    String password = printed.substring(printed.lastIndexOf(' ') + 1);
    assertThat(printed.lines()).hasSize(1);
    assertThat(password).hasSizeGreaterThanOrEqualTo(20);
    String stored = users.loadUserByUsername("admin").getPassword();
    assertThat(stored).startsWith("{bcrypt}").doesNotContain(password);
    assertThat(encoder.matches(password, stored)).isTrue();
    assertThat(users.loadUserByUsername("admin").getAuthorities())
        .extracting(Object::toString)
        .containsExactlyInAnyOrder("ROLE_ADMIN", Masking.REVEAL);
  }

  @Test
  void theRevealPermissionGoesToTheConfiguredRolesUnlessAnAccountSaysOtherwise() {
    ConsoleProperties settings = new ConsoleProperties();
    settings.getAdmin().setPassword("s3cret");
    settings.getUsers().put("olivia", user(Role.OPERATOR, null));
    settings.getUsers().put("rita", user(Role.OPERATOR, true));
    settings.getUsers().put("victor", user(Role.VIEWER, null));
    assertThat(revealers(settings)).containsExactly("admin", "rita");
    settings.setRevealRoles(java.util.List.of(Role.OPERATOR));
    settings.getAdmin().setReveal(false);
    settings.getUsers().put("otto", user(Role.OPERATOR, false));
    assertThat(revealers(settings)).containsExactly("olivia", "rita");
  }

  private static ConsoleProperties.User user(Role role, Boolean reveal) {
    ConsoleProperties.User u = new ConsoleProperties.User();
    u.setPassword("pw-" + role);
    u.setRole(role);
    u.setReveal(reveal);
    return u;
  }

  private java.util.List<String> revealers(ConsoleProperties settings) {
    InMemoryUserDetailsManager users =
        ConsoleUsers.from(settings, encoder, new PrintStream(new ByteArrayOutputStream()));
    return java.util.stream.Stream.of("admin", "olivia", "otto", "rita", "victor")
        .filter(users::userExists)
        .filter(name ->
            users.loadUserByUsername(name).getAuthorities().stream()
                .anyMatch(a -> a.getAuthority().equals(Masking.REVEAL)))
        .toList();
  }

  @Test
  void configuredPasswordsAreHashedAndEncodedOnesKept() {
    ConsoleProperties settings = new ConsoleProperties();
    settings.getAdmin().setPassword("s3cret");
    ConsoleProperties.User viewer = new ConsoleProperties.User();
    String encoded = encoder.encode("look");
    viewer.setPassword(encoded);
    settings.getUsers().put("vera", viewer);
    InMemoryUserDetailsManager users =
        ConsoleUsers.from(settings, encoder, new PrintStream(new ByteArrayOutputStream()));
    assertThat(encoder.matches("s3cret", users.loadUserByUsername("admin").getPassword())).isTrue();
    assertThat(users.loadUserByUsername("vera").getPassword()).isEqualTo(encoded);
    assertThat(users.loadUserByUsername("vera").getAuthorities())
        .extracting(Object::toString)
        .containsExactly("ROLE_VIEWER");
    ConsoleProperties.User nopw = new ConsoleProperties.User();
    settings.getUsers().put("nopw", nopw);
    assertThatThrownBy(() ->
            ConsoleUsers.from(settings, encoder, new PrintStream(new ByteArrayOutputStream())))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("nopw");
  }
}
