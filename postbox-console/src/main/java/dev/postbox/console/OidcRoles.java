package dev.postbox.console;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.springframework.security.core.GrantedAuthority;
import org.springframework.security.core.authority.SimpleGrantedAuthority;
import org.springframework.security.oauth2.client.oidc.userinfo.OidcUserRequest;
import org.springframework.security.oauth2.client.oidc.userinfo.OidcUserService;
import org.springframework.security.oauth2.client.userinfo.OAuth2UserService;
import org.springframework.security.oauth2.core.OAuth2AuthenticationException;
import org.springframework.security.oauth2.core.OAuth2Error;
import org.springframework.security.oauth2.core.oidc.user.DefaultOidcUser;
import org.springframework.security.oauth2.core.oidc.user.OidcUser;

/**
 * A single sign-on user's console roles from one claim of their token (Spring Security's {@link
 * OidcUserService} loads and checks the user; this maps): each claim value listed under a role
 * grants it, the reveal permission follows {@code reveal-roles} ({@link Masking}). A user whose
 * values map to no role is refused at login ({@link #NO_ROLE}).
 */
final class OidcRoles implements OAuth2UserService<OidcUserRequest, OidcUser> {

  /** The error code of a login refused for want of a mapped role. */
  static final String NO_ROLE = "postbox_no_console_role";

  private final OAuth2UserService<OidcUserRequest, OidcUser> delegate;
  private final ConsoleProperties settings;

  OidcRoles(ConsoleProperties settings) {
    this(new OidcUserService(), settings);
  }

  OidcRoles(OAuth2UserService<OidcUserRequest, OidcUser> delegate, ConsoleProperties settings) {
    this.delegate = delegate;
    this.settings = settings;
  }

  @Override
  public OidcUser loadUser(OidcUserRequest request) {
    OidcUser user = delegate.loadUser(request);
    ConsoleOidcProperties oidc = settings.getOidc();
    String nameClaim =
        user.getClaims().get(oidc.getUsernameClaim()) != null ? oidc.getUsernameClaim() : "sub";
    List<String> values = values(user.getClaims().get(oidc.getRolesClaim()));
    List<GrantedAuthority> authorities = authorities(values);
    if (authorities.isEmpty()) {
      throw new NoRole(
          String.valueOf(user.getClaims().get(nameClaim)), oidc.getRolesClaim(), values);
    }
    return new DefaultOidcUser(authorities, user.getIdToken(), user.getUserInfo(), nameClaim);
  }

  /** A login refused: the user's claim values map to no console role. */
  static final class NoRole extends OAuth2AuthenticationException {
    private static final long serialVersionUID = 1L;

    /** The user's name, by the username claim. */
    final String user;

    NoRole(String user, String claim, List<String> values) {
      super(
          new OAuth2Error(
              NO_ROLE, user + " has no console role (" + claim + ": " + values + ")", null));
      this.user = user;
    }
  }

  /**
   * The console authorities the claim values grant: the highest role they name (it includes the
   * ones below it), and the reveal permission when any role they name has it by {@code
   * reveal-roles}.
   */
  List<GrantedAuthority> authorities(Collection<String> values) {
    Role highest = null;
    boolean reveals = false;
    for (Map.Entry<Role, List<String>> e : settings.getOidc().getRoles().entrySet()) {
      if (e.getValue().stream().anyMatch(values::contains)) {
        highest = highest == null || e.getKey().compareTo(highest) > 0 ? e.getKey() : highest;
        reveals |= settings.reveals(e.getKey(), null);
      }
    }
    List<GrantedAuthority> out = new ArrayList<>();
    if (highest != null) {
      out.add(new SimpleGrantedAuthority("ROLE_" + highest.name()));
      if (reveals) {
        out.add(new SimpleGrantedAuthority(Masking.REVEAL));
      }
    }
    return out;
  }

  /** A claim's values: a list of strings, or one string (values separated by spaces or commas). */
  static List<String> values(Object claim) {
    if (claim instanceof Collection<?> c) {
      return c.stream().map(String::valueOf).toList();
    }
    if (claim instanceof String s && !s.isBlank()) {
      return List.of(s.trim().split("[\\s,]+"));
    }
    return List.of();
  }
}
