package dev.postbox.oidcprovider;

import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.RSAKey;
import com.nimbusds.jose.jwk.source.ImmutableJWKSet;
import com.nimbusds.jose.jwk.source.JWKSource;
import com.nimbusds.jose.proc.SecurityContext;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.NoSuchAlgorithmException;
import java.security.interfaces.RSAPrivateKey;
import java.security.interfaces.RSAPublicKey;
import java.util.List;
import java.util.UUID;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;
import org.springframework.http.MediaType;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configuration.OAuth2AuthorizationServerConfiguration;
import org.springframework.security.config.annotation.web.configurers.oauth2.server.authorization.OAuth2AuthorizationServerConfigurer;
import org.springframework.security.core.GrantedAuthority;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.oauth2.core.AuthorizationGrantType;
import org.springframework.security.oauth2.core.ClientAuthenticationMethod;
import org.springframework.security.oauth2.core.oidc.endpoint.OidcParameterNames;
import org.springframework.security.oauth2.jwt.JwtDecoder;
import org.springframework.security.oauth2.server.authorization.client.InMemoryRegisteredClientRepository;
import org.springframework.security.oauth2.server.authorization.client.RegisteredClient;
import org.springframework.security.oauth2.server.authorization.client.RegisteredClientRepository;
import org.springframework.security.oauth2.server.authorization.settings.AuthorizationServerSettings;
import org.springframework.security.oauth2.server.authorization.settings.ClientSettings;
import org.springframework.security.oauth2.server.authorization.token.JwtEncodingContext;
import org.springframework.security.oauth2.server.authorization.token.OAuth2TokenCustomizer;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.authentication.LoginUrlAuthenticationEntryPoint;
import org.springframework.security.web.util.matcher.MediaTypeRequestMatcher;

/**
 * A real OpenID Connect provider for the console's single sign-on tests: Spring Authorization
 * Server on a random port of localhost, with the console registered as a confidential client
 * (redirect to any port of 127.0.0.1, as loopback redirects allow) and users whose ID token carries
 * a {@code groups} claim. Its own package, so that the console's component scan never finds it.
 */
@Configuration(proxyBeanMethods = false)
@EnableAutoConfiguration
public class OidcTestProvider {

  public static final String CLIENT_ID = "postbox-console";
  public static final String CLIENT_SECRET = "console-client-secret-1";
  public static final String PASSWORD = "provider-password-1";

  private static final String GROUP = "GROUP_";

  /** Starts the provider; its issuer is {@link #issuer(ConfigurableApplicationContext)}. */
  public static ConfigurableApplicationContext start() {
    // as arguments (they outrank any application.properties), and the console's own
    // application.properties not read: its fixed port, cookie name and settings are the console's
    return new SpringApplicationBuilder(OidcTestProvider.class)
        .run(
            "--spring.config.name=oidc-test-provider",
            "--server.port=0",
            "--server.address=127.0.0.1",
            // its own session cookie, apart from the console's on the same machine
            "--server.servlet.session.cookie.name=PROVIDER_SESSION",
            "--spring.main.banner-mode=off",
            "--spring.thymeleaf.enabled=false");
  }

  /** The issuer URL: on "localhost", so that its cookies never mix with the console's. */
  public static String issuer(ConfigurableApplicationContext provider) {
    int port = ((WebServerApplicationContext) provider).getWebServer().getPort();
    return "http://localhost:" + port;
  }

  @Bean
  @Order(1)
  SecurityFilterChain authorizationServer(HttpSecurity http) throws Exception {
    OAuth2AuthorizationServerConfigurer server = new OAuth2AuthorizationServerConfigurer();
    http.securityMatcher(server.getEndpointsMatcher())
        .with(server, s -> s.oidc(Customizer.withDefaults()))
        .authorizeHttpRequests(a -> a.anyRequest().authenticated())
        .exceptionHandling(e ->
            e.defaultAuthenticationEntryPointFor(
                new LoginUrlAuthenticationEntryPoint("/login"),
                new MediaTypeRequestMatcher(MediaType.TEXT_HTML)))
        .oauth2ResourceServer(r -> r.jwt(Customizer.withDefaults()));
    return http.build();
  }

  @Bean
  @Order(2)
  SecurityFilterChain loginPage(HttpSecurity http) throws Exception {
    http.authorizeHttpRequests(a -> a.anyRequest().authenticated())
        .formLogin(Customizer.withDefaults());
    return http.build();
  }

  /** ada is in postbox-admins, vic in postbox-viewers, nemo only in marketing. */
  @Bean
  InMemoryUserDetailsManager providerUsers() {
    return new InMemoryUserDetailsManager(
        user("ada", "postbox-admins", "staff"),
        user("vic", "postbox-viewers"),
        user("nemo", "marketing"));
  }

  private static org.springframework.security.core.userdetails.UserDetails user(
      String name, String... groups) {
    return User.withUsername(name)
        .password("{noop}" + PASSWORD)
        .authorities(java.util.Arrays.stream(groups).map(g -> GROUP + g).toArray(String[]::new))
        .build();
  }

  @Bean
  RegisteredClientRepository clients() {
    return new InMemoryRegisteredClientRepository(
        RegisteredClient.withId(UUID.randomUUID().toString())
            .clientId(CLIENT_ID)
            .clientSecret("{noop}" + CLIENT_SECRET)
            .clientAuthenticationMethod(ClientAuthenticationMethod.CLIENT_SECRET_BASIC)
            .authorizationGrantType(AuthorizationGrantType.AUTHORIZATION_CODE)
            .authorizationGrantType(AuthorizationGrantType.REFRESH_TOKEN)
            .redirectUri("http://127.0.0.1/login/oauth2/code/oidc")
            .scope("openid")
            .scope("profile")
            .scope("email")
            .clientSettings(ClientSettings.builder().requireAuthorizationConsent(false).build())
            .build());
  }

  /**
   * Lets the console at {@code uri} be the client's post-logout redirect (its port is known only
   * once it runs; the provider checks the URI exactly).
   */
  public static void allowPostLogoutRedirect(ConfigurableApplicationContext provider, String uri) {
    RegisteredClientRepository clients = provider.getBean(RegisteredClientRepository.class);
    RegisteredClient client = clients.findByClientId(CLIENT_ID);
    clients.save(RegisteredClient.from(client).postLogoutRedirectUri(uri).build());
  }

  /** The user's groups in the ID token's {@code groups} claim, and their preferred user name. */
  @Bean
  OAuth2TokenCustomizer<JwtEncodingContext> groupsClaim() {
    return context -> {
      if (OidcParameterNames.ID_TOKEN.equals(context.getTokenType().getValue())) {
        List<String> groups =
            context.getPrincipal().getAuthorities().stream()
                .map(GrantedAuthority::getAuthority)
                .filter(a -> a.startsWith(GROUP))
                .map(a -> a.substring(GROUP.length()))
                .toList();
        context.getClaims().claim("groups", groups);
        context.getClaims().claim("preferred_username", context.getPrincipal().getName());
      }
    };
  }

  @Bean
  JWKSource<SecurityContext> keys() throws NoSuchAlgorithmException {
    KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
    g.initialize(2048);
    KeyPair pair = g.generateKeyPair();
    RSAKey key =
        new RSAKey.Builder((RSAPublicKey) pair.getPublic())
            .privateKey((RSAPrivateKey) pair.getPrivate())
            .keyID(UUID.randomUUID().toString())
            .build();
    return new ImmutableJWKSet<>(new JWKSet(key));
  }

  @Bean
  JwtDecoder jwtDecoder(JWKSource<SecurityContext> keys) {
    return OAuth2AuthorizationServerConfiguration.jwtDecoder(keys);
  }

  @Bean
  AuthorizationServerSettings authorizationServerSettings() {
    return AuthorizationServerSettings.builder().build();
  }
}
