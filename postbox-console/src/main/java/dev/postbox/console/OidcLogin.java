package dev.postbox.console;

import java.net.URI;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.oauth2.client.oidc.web.logout.OidcClientInitiatedLogoutSuccessHandler;
import org.springframework.security.oauth2.client.registration.ClientRegistration;
import org.springframework.security.oauth2.client.registration.ClientRegistrations;
import org.springframework.security.oauth2.client.registration.InMemoryClientRegistrationRepository;
import org.springframework.security.oauth2.core.OAuth2AuthenticationException;
import org.springframework.security.web.authentication.SavedRequestAwareAuthenticationSuccessHandler;
import org.springframework.security.web.authentication.logout.LogoutSuccessHandler;

/**
 * Single sign-on with an OpenID Connect provider ({@link ConsoleOidcProperties}), beside the form
 * login: the settings checked at start-up (each error names its option), the provider's discovery
 * document read, and Spring Security's OAuth2 login (authorization code flow, state, nonce, PKCE,
 * ID token validation) configured with the console's role mapping ({@link OidcRoles}). Logins are
 * logged; refusals are recorded like failed form logins ({@link SecurityEvents}) and answered 403.
 */
final class OidcLogin {

  /** The registration id: the login starts at {@value #START}. */
  static final String REGISTRATION = "oidc";

  static final String START = "/oauth2/authorization/" + REGISTRATION;

  /** The page after a logout. */
  static final String LOGGED_OUT = "/login?logout";

  private static final Logger log = LoggerFactory.getLogger(OidcLogin.class);

  private OidcLogin() {}

  /**
   * The client registration, when single sign-on is configured; fails naming the option when the
   * settings are incomplete or the provider's discovery document cannot be read.
   */
  static Optional<ClientRegistration> registration(ConsoleOidcProperties oidc) {
    if (!validated(oidc)) {
      return Optional.empty();
    }
    ClientRegistration.Builder b;
    try {
      b = ClientRegistrations.fromIssuerLocation(oidc.getIssuerUri());
    } catch (RuntimeException e) {
      throw new IllegalStateException(
          "postbox console: postbox.console.oidc.issuer-uri (--oidc-issuer-uri): no OpenID"
              + " provider configuration could be read from "
              + oidc.getIssuerUri()
              + ": "
              + e.getMessage(),
          e);
    }
    return Optional.of(
        b.registrationId(REGISTRATION)
            .clientId(oidc.getClientId())
            .clientSecret(oidc.getClientSecret())
            .scope(oidc.getScopes())
            .redirectUri("{baseUrl}/login/oauth2/code/{registrationId}")
            .build());
  }

  /** Whether single sign-on is on; fails naming the option when its settings are incomplete. */
  static boolean validated(ConsoleOidcProperties oidc) {
    if (!oidc.enabled()) {
      String set =
          oidc.getClientId() != null
              ? "client-id"
              : oidc.getClientSecret() != null
                  ? "client-secret"
                  : !oidc.getRoles().isEmpty() ? "roles" : null;
      if (set != null) {
        throw invalid(
            "issuer-uri (--oidc-issuer-uri) is not set, but postbox.console.oidc."
                + set
                + " is: give the provider's issuer URL to turn single sign-on on");
      }
      return false;
    }
    URI issuer;
    try {
      issuer = URI.create(oidc.getIssuerUri().trim());
    } catch (IllegalArgumentException e) {
      throw invalid("issuer-uri (--oidc-issuer-uri) is not a URL: " + oidc.getIssuerUri());
    }
    if (!List.of("https", "http").contains(String.valueOf(issuer.getScheme()))
        || issuer.getHost() == null) {
      throw invalid("issuer-uri (--oidc-issuer-uri) is not an http(s) URL: " + issuer);
    }
    if (blank(oidc.getClientId())) {
      throw invalid("client-id (--oidc-client-id) is required with single sign-on");
    }
    if (blank(oidc.getClientSecret())) {
      throw invalid(
          "client-secret is required with single sign-on: set POSTBOX_CONSOLE_OIDC_CLIENT_SECRET"
              + " (or name the variable with --oidc-client-secret-env)");
    }
    if (blank(oidc.getRolesClaim())) {
      throw invalid("roles-claim (--oidc-roles-claim) is empty");
    }
    if (oidc.getRoles().values().stream().allMatch(v -> v == null || v.isEmpty())) {
      throw invalid(
          "roles (--oidc-role ROLE=VALUE) maps no claim value to a role: nobody could log in"
              + " (for example postbox.console.oidc.roles.admin=postbox-admins)");
    }
    if (!oidc.getScopes().contains("openid")) {
      throw invalid("scopes must include openid");
    }
    return true;
  }

  /** Adds the OAuth2 login to the console's filter chain. */
  static void configure(
      HttpSecurity http,
      ClientRegistration registration,
      ConsoleProperties settings,
      SecurityEvents events)
      throws Exception {
    SavedRequestAwareAuthenticationSuccessHandler toPage =
        new SavedRequestAwareAuthenticationSuccessHandler();
    toPage.setDefaultTargetUrl("/");
    http.oauth2Login(o ->
        o.loginPage("/login")
            .clientRegistrationRepository(new InMemoryClientRegistrationRepository(registration))
            .userInfoEndpoint(u -> u.oidcUserService(new OidcRoles(settings)))
            .successHandler((request, response, authentication) -> {
              log.info(
                  "postbox console: single sign-on login of {} from {} with {}",
                  authentication.getName(),
                  request.getRemoteAddr(),
                  authentication.getAuthorities());
              toPage.onAuthenticationSuccess(request, response, authentication);
            })
            .failureHandler((request, response, exception) -> {
              String what =
                  "single sign-on: "
                      + (exception instanceof OAuth2AuthenticationException o2
                          ? o2.getError().toString()
                          : exception.getMessage());
              String who = exception instanceof OidcRoles.NoRole n ? n.user : "anonymous";
              events.record(SecurityEvents.Kind.LOGIN_FAILED, who, request.getRemoteAddr(), what);
              if (exception instanceof OidcRoles.NoRole) {
                Rejections.noRole(response, who);
              } else {
                response.sendRedirect(request.getContextPath() + "/login?sso-error");
              }
            }));
  }

  /**
   * Where a logout goes with single sign-on on: a single sign-on user is logged out at the provider
   * too (OpenID Connect RP-initiated logout, at its {@code end_session_endpoint}, with the ID token
   * as hint) and comes back to {@code /login?logout}, so the next single sign-on login asks for the
   * password again; a local account, or a provider without that endpoint, goes to {@code
   * /login?logout} at once. The provider must allow {@code <console URL>/login?logout} as the
   * client's post-logout redirect URI.
   */
  static LogoutSuccessHandler logoutSuccess(ClientRegistration registration) {
    OidcClientInitiatedLogoutSuccessHandler h =
        new OidcClientInitiatedLogoutSuccessHandler(
            new InMemoryClientRegistrationRepository(registration));
    h.setPostLogoutRedirectUri("{baseUrl}" + LOGGED_OUT);
    h.setDefaultTargetUrl(LOGGED_OUT);
    return h;
  }

  /**
   * The origin of the provider's end-session endpoint ({@code https://sso.example.com}), when its
   * discovery document names one: the logout form's redirect goes there, so the pages' {@code
   * form-action} must allow it (a browser blocks a form whose redirect leaves the allowed origins).
   */
  static Optional<String> logoutOrigin(ClientRegistration registration) {
    Object endpoint =
        registration.getProviderDetails().getConfigurationMetadata().get("end_session_endpoint");
    if (endpoint == null) {
      return Optional.empty();
    }
    try {
      URI u = URI.create(endpoint.toString());
      if (u.getScheme() == null || u.getHost() == null) {
        return Optional.empty();
      }
      return Optional.of(
          u.getScheme() + "://" + u.getHost() + (u.getPort() == -1 ? "" : ":" + u.getPort()));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  private static boolean blank(String s) {
    return s == null || s.isBlank();
  }

  private static IllegalStateException invalid(String what) {
    return new IllegalStateException("postbox console: postbox.console.oidc." + what);
  }
}
