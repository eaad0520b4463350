package dev.postbox.console;

import jakarta.servlet.http.HttpServletRequest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.security.access.hierarchicalroles.RoleHierarchy;
import org.springframework.security.access.hierarchicalroles.RoleHierarchyImpl;
import org.springframework.security.config.annotation.method.configuration.EnableMethodSecurity;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.crypto.factory.PasswordEncoderFactories;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.authentication.HttpStatusEntryPoint;
import org.springframework.security.web.authentication.LoginUrlAuthenticationEntryPoint;
import org.springframework.security.web.authentication.SavedRequestAwareAuthenticationSuccessHandler;
import org.springframework.security.web.authentication.UsernamePasswordAuthenticationFilter;
import org.springframework.security.web.csrf.CsrfFilter;
import org.springframework.security.web.header.writers.ReferrerPolicyHeaderWriter.ReferrerPolicy;
import org.springframework.security.web.util.matcher.AnyRequestMatcher;
import org.springframework.security.web.util.matcher.RequestMatcher;

/**
 * Security on by default: every page and API needs a login (pages redirect to /login, the JSON API
 * answers 401); roles (and the reveal permission, {@link Masking}) are checked on the URL and again
 * on each action method; session cookie with Spring Security's CSRF token on every form and the
 * Origin checked on every state-changing request; strict security headers; login attempts backed
 * off ({@link LoginThrottle}); security events logged and audited ({@link SecurityEvents}).
 */
@Configuration(proxyBeanMethods = false)
@EnableMethodSecurity
class ConsoleSecurity {

  /** The JSON API (and any request that asks for JSON only) gets 401, not a login page. */
  static final RequestMatcher API =
      request -> path(request).startsWith("/api/") || wantsJsonOnly(request);

  /** The request's path inside the application. */
  static String path(HttpServletRequest request) {
    return request.getRequestURI().substring(request.getContextPath().length());
  }

  private static boolean wantsJsonOnly(HttpServletRequest request) {
    String accept = request.getHeader("Accept");
    return accept != null && accept.contains("application/json") && !accept.contains("text/html");
  }

  @Bean
  SecurityEvents securityEvents(javax.sql.DataSource consoleDataSource) {
    return new SecurityEvents(consoleDataSource);
  }

  @Bean
  LoginThrottle loginThrottle(
      ConsoleProperties settings, InMemoryUserDetailsManager consoleUsers, java.time.Clock clock) {
    ConsoleProperties.Login l = settings.getLogin();
    return new LoginThrottle(
        l.getAttemptsPerMinute(),
        l.getBackoff(),
        l.getMaxBackoff(),
        consoleUsers::userExists,
        clock);
  }

  @Bean
  SecurityFilterChain consoleFilterChain(
      HttpSecurity http, LoginThrottle throttle, SecurityEvents events, ConsoleProperties settings)
      throws Exception {
    java.util.Optional<org.springframework.security.oauth2.client.registration.ClientRegistration>
        sso = OidcLogin.registration(settings.getOidc());
    if (sso.isPresent()) {
      OidcLogin.configure(http, sso.get(), settings, events);
    }
    SavedRequestAwareAuthenticationSuccessHandler toPage =
        new SavedRequestAwareAuthenticationSuccessHandler();
    toPage.setDefaultTargetUrl("/");
    http.authorizeHttpRequests(a ->
            a.requestMatchers("/login", "/css/**", "/js/**", "/error")
                .permitAll()
                .requestMatchers(HttpMethod.POST, "/actions/dead-letters/*/reveal")
                .hasAuthority(Masking.REVEAL)
                .requestMatchers(HttpMethod.POST, "/actions/group/**")
                .hasRole(Role.ADMIN.name())
                .requestMatchers(HttpMethod.POST, "/actions/replay-jobs", "/actions/replay-jobs/**")
                .hasRole(Role.ADMIN.name())
                .requestMatchers(HttpMethod.POST, "/actions/**")
                .hasRole(Role.OPERATOR.name())
                .anyRequest()
                .hasRole(Role.VIEWER.name()))
        .formLogin(f ->
            f.loginPage("/login")
                .successHandler((request, response, authentication) -> {
                  throttle.succeeded(request.getRemoteAddr(), authentication.getName());
                  toPage.onAuthenticationSuccess(request, response, authentication);
                })
                .failureHandler((request, response, exception) -> {
                  String user = String.valueOf(request.getParameter("username"));
                  throttle.failed(request.getRemoteAddr(), user);
                  events.record(
                      SecurityEvents.Kind.LOGIN_FAILED,
                      user,
                      request.getRemoteAddr(),
                      "wrong user name or password");
                  response.sendRedirect(request.getContextPath() + "/login?error");
                }))
        .logout(l ->
            sso.ifPresentOrElse(
                r -> l.logoutSuccessHandler(OidcLogin.logoutSuccess(r)),
                () -> l.logoutSuccessUrl(OidcLogin.LOGGED_OUT)))
        .exceptionHandling(e ->
            e.accessDeniedHandler(new ConsoleAccessDenied(events))
                .defaultAuthenticationEntryPointFor(
                    new HttpStatusEntryPoint(HttpStatus.UNAUTHORIZED), API)
                .defaultAuthenticationEntryPointFor(
                    new LoginUrlAuthenticationEntryPoint("/login"), AnyRequestMatcher.INSTANCE))
        .headers(h ->
            h.contentSecurityPolicy(c ->
                    c.policyDirectives(
                        "default-src 'self'; script-src 'self'; style-src 'self';"
                            + " img-src 'self' data:; object-src 'none'; base-uri 'none';"
                            + " form-action 'self'"
                            + sso.flatMap(OidcLogin::logoutOrigin).map(o -> " " + o).orElse("")
                            + "; frame-ancestors 'none'"))
                .frameOptions(f -> f.deny())
                .referrerPolicy(r -> r.policy(ReferrerPolicy.NO_REFERRER)))
        .addFilterBefore(new OriginCheck(events), CsrfFilter.class)
        .addFilterBefore(
            new LoginThrottleFilter(throttle, events), UsernamePasswordAuthenticationFilter.class);
    return http.build();
  }

  /**
   * With single sign-on the session cookie is SameSite=Lax, not Strict: the provider's redirect
   * back to the console (a navigation from another site) must carry the session that holds the
   * login's state, and a Strict cookie is never sent on it. State-changing requests stay guarded by
   * the CSRF token and the Origin check ({@link OriginCheck}).
   */
  @Bean
  org.springframework.boot.web.server.WebServerFactoryCustomizer<
          org.springframework.boot.web.server.servlet.ConfigurableServletWebServerFactory>
      ssoSessionCookie(ConsoleProperties settings) {
    return factory -> {
      if (settings.getOidc().enabled()) {
        factory
            .getSettings()
            .getSession()
            .getCookie()
            .setSameSite(org.springframework.boot.web.server.Cookie.SameSite.LAX);
      }
    };
  }

  @Bean
  static RoleHierarchy roleHierarchy() {
    return RoleHierarchyImpl.fromHierarchy(Role.hierarchy());
  }

  @Bean
  PasswordEncoder passwordEncoder() {
    return PasswordEncoderFactories.createDelegatingPasswordEncoder();
  }

  @Bean
  InMemoryUserDetailsManager consoleUsers(ConsoleProperties settings, PasswordEncoder encoder) {
    return ConsoleUsers.from(settings, encoder, System.out);
  }
}
