package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.security.core.GrantedAuthority;
import picocli.CommandLine;

/**
 * The single sign-on settings: bound from properties and the environment's names, checked at
 * start-up with errors naming the option, claim values mapped to roles, and the command line's
 * options turned into the settings (the client secret only from the environment).
 */
class ConsoleOidcSettingsTest {

  private static ConsoleProperties bind(Map<String, String> props) {
    return new Binder(new MapConfigurationPropertySource(props))
        .bind("postbox.console", Bindable.of(ConsoleProperties.class))
        .orElseGet(ConsoleProperties::new);
  }

  private static Map<String, String> complete() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("postbox.console.oidc.issuer-uri", "https://login.example.com/realms/ops");
    p.put("postbox.console.oidc.client-id", "postbox-console");
    p.put("postbox.console.oidc.client-secret", "s3cret");
    p.put("postbox.console.oidc.roles.admin", "postbox-admins");
    p.put("postbox.console.oidc.roles.VIEWER", "postbox-viewers, auditors");
    return p;
  }

  @Test
  void offByDefaultAndCompleteSettingsBind() {
    assertThat(OidcLogin.validated(bind(Map.of()).getOidc())).isFalse();
    ConsoleOidcProperties oidc = bind(complete()).getOidc();
    assertThat(OidcLogin.validated(oidc)).isTrue();
    assertThat(oidc.getRolesClaim()).isEqualTo("groups");
    assertThat(oidc.getRoles())
        .containsEntry(Role.ADMIN, List.of("postbox-admins"))
        .containsEntry(Role.VIEWER, List.of("postbox-viewers", "auditors"));
  }

  @Test
  void incompleteSettingsFailNamingTheOption() {
    Map<String, String> noIssuer = complete();
    noIssuer.remove("postbox.console.oidc.issuer-uri");
    assertInvalid(noIssuer, "postbox.console.oidc.issuer-uri (--oidc-issuer-uri) is not set");
    Map<String, String> noId = complete();
    noId.remove("postbox.console.oidc.client-id");
    assertInvalid(noId, "postbox.console.oidc.client-id (--oidc-client-id) is required");
    Map<String, String> noSecret = complete();
    noSecret.remove("postbox.console.oidc.client-secret");
    assertInvalid(noSecret, "POSTBOX_CONSOLE_OIDC_CLIENT_SECRET");
    Map<String, String> noRoles = complete();
    noRoles.remove("postbox.console.oidc.roles.admin");
    noRoles.remove("postbox.console.oidc.roles.VIEWER");
    assertInvalid(noRoles, "postbox.console.oidc.roles (--oidc-role ROLE=VALUE) maps no claim");
    Map<String, String> notUrl = complete();
    notUrl.put("postbox.console.oidc.issuer-uri", "login.example.com");
    assertInvalid(notUrl, "postbox.console.oidc.issuer-uri (--oidc-issuer-uri) is not an http(s)");
  }

  @Test
  void anUnreachableProviderFailsNamingTheIssuer() {
    Map<String, String> p = complete();
    p.put("postbox.console.oidc.issuer-uri", "http://127.0.0.1:1/realms/none");
    assertThatThrownBy(() -> OidcLogin.registration(bind(p).getOidc()))
        .hasMessageContaining("postbox.console.oidc.issuer-uri (--oidc-issuer-uri)")
        .hasMessageContaining("http://127.0.0.1:1/realms/none");
  }

  private static void assertInvalid(Map<String, String> props, String message) {
    assertThatThrownBy(() -> OidcLogin.validated(bind(props).getOidc()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(message);
  }

  @Test
  void claimValuesMapToRolesAndTheRevealPermissionByRevealRoles() {
    OidcRoles roles = new OidcRoles(bind(complete()));
    assertThat(names(roles.authorities(List.of("auditors", "marketing"))))
        .containsExactly("ROLE_VIEWER");
    assertThat(names(roles.authorities(List.of("postbox-admins", "auditors"))))
        .containsExactly("ROLE_ADMIN", Masking.REVEAL);
    assertThat(roles.authorities(List.of("marketing"))).isEmpty();
    assertThat(OidcRoles.values("a b,c")).containsExactly("a", "b", "c");
    assertThat(OidcRoles.values(List.of("x", "y"))).containsExactly("x", "y");
    assertThat(OidcRoles.values(null)).isEmpty();
  }

  private static List<String> names(List<GrantedAuthority> authorities) {
    return authorities.stream().map(GrantedAuthority::getAuthority).toList();
  }

  @Test
  void theCommandLineOptionsBecomeTheSettingsAndTheSecretComesFromTheEnvironment() {
    ConsoleCommand command = new ConsoleCommand(Map.of("SSO_SECRET", "from-the-environment")::get);
    new CommandLine(command)
        .parseArgs(
            "--oidc-issuer-uri",
            "https://login.example.com",
            "--oidc-client-id",
            "postbox-console",
            "--oidc-client-secret-env",
            "SSO_SECRET",
            "--oidc-roles-claim",
            "roles",
            "--oidc-role",
            "ADMIN=postbox-admins",
            "--oidc-role",
            "OPERATOR=ops,oncall");
    Map<String, Object> props = new LinkedHashMap<>();
    assertThat(command.oidc(props)).isTrue();
    assertThat(props)
        .containsEntry("postbox.console.oidc.issuer-uri", "https://login.example.com")
        .containsEntry("postbox.console.oidc.client-id", "postbox-console")
        .containsEntry("postbox.console.oidc.client-secret", "from-the-environment")
        .containsEntry("postbox.console.oidc.roles-claim", "roles")
        .containsEntry("postbox.console.oidc.roles.admin", "postbox-admins")
        .containsEntry("postbox.console.oidc.roles.operator", "ops,oncall");
    Map<String, String> asStrings = new LinkedHashMap<>();
    props.forEach((k, v) -> asStrings.put(k, String.valueOf(v)));
    assertThat(OidcLogin.validated(bind(asStrings).getOidc())).isTrue();
  }

  @Test
  void aSecretVariableThatIsNotSetIsAUsageError() {
    ConsoleCommand command = new ConsoleCommand(Map.<String, String>of()::get);
    new CommandLine(command).parseArgs("--oidc-client-secret-env", "NOT_SET_ANYWHERE");
    assertThat(command.oidc(new LinkedHashMap<>())).isFalse();
  }
}
