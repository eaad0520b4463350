package dev.postbox.console;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Optional single sign-on ({@code postbox.console.oidc.*}): an OpenID Connect provider beside the
 * local users' form login. Off while {@code issuer-uri} is unset; then nothing of it may be set.
 * The client secret comes from the environment ({@code POSTBOX_CONSOLE_OIDC_CLIENT_SECRET}), never
 * the command line. A user's roles come from one claim of the ID token ({@code roles-claim},
 * default {@code groups}): each claim value listed under a role in {@code roles} grants that role;
 * a user with none is refused.
 */
public class ConsoleOidcProperties {

  private String issuerUri;
  private String clientId;
  private String clientSecret;
  private String rolesClaim = "groups";
  private String usernameClaim = "preferred_username";
  private List<String> scopes = new ArrayList<>(List.of("openid", "profile", "email"));
  private Map<Role, List<String>> roles = new LinkedHashMap<>();

  /** Whether single sign-on is on (an issuer is given). */
  boolean enabled() {
    return issuerUri != null && !issuerUri.isBlank();
  }

  /**
   * The provider's issuer URL ({@code https://login.example.com/realms/ops}); its discovery
   * document is read at start-up.
   */
  public String getIssuerUri() {
    return issuerUri;
  }

  public void setIssuerUri(String issuerUri) {
    this.issuerUri = issuerUri;
  }

  /** The console's client id at the provider. */
  public String getClientId() {
    return clientId;
  }

  public void setClientId(String clientId) {
    this.clientId = clientId;
  }

  /** The client secret: from {@code POSTBOX_CONSOLE_OIDC_CLIENT_SECRET}, never the command line. */
  public String getClientSecret() {
    return clientSecret;
  }

  public void setClientSecret(String clientSecret) {
    this.clientSecret = clientSecret;
  }

  /** The claim holding the user's groups or roles (default {@code groups}). */
  public String getRolesClaim() {
    return rolesClaim;
  }

  public void setRolesClaim(String rolesClaim) {
    this.rolesClaim = rolesClaim;
  }

  /**
   * The claim shown as the user's name in the audit (default {@code preferred_username}; the
   * subject {@code sub} when the token has no such claim).
   */
  public String getUsernameClaim() {
    return usernameClaim;
  }

  public void setUsernameClaim(String usernameClaim) {
    this.usernameClaim = usernameClaim;
  }

  /** The scopes asked for (default openid, profile, email). */
  public List<String> getScopes() {
    return scopes;
  }

  public void setScopes(List<String> scopes) {
    this.scopes = scopes;
  }

  /**
   * Per console role, the claim values that grant it ({@code postbox.console.oidc.roles.admin=
   * postbox-admins}). A user gets every role one of their values names (the highest counts, the
   * roles include the ones below them) and the reveal permission by {@code reveal-roles}.
   */
  public Map<Role, List<String>> getRoles() {
    return roles;
  }

  public void setRoles(Map<Role, List<String>> roles) {
    this.roles = roles;
  }
}
