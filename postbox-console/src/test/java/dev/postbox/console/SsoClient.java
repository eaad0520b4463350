package dev.postbox.console;

import java.io.IOException;
import java.net.CookieManager;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A user agent for the single sign-on tests: java.net.http with its own cookie jar, following
 * redirects (between the console and the provider), asking for HTML as a browser does; posts forms
 * with the CSRF token of the page it is on.
 */
final class SsoClient {

  private static final Pattern CSRF = Pattern.compile("name=\"_csrf\"[^>]*value=\"([^\"]+)\"");

  private final HttpClient http =
      HttpClient.newBuilder()
          .cookieHandler(new CookieManager())
          .followRedirects(HttpClient.Redirect.NORMAL)
          .connectTimeout(Duration.ofSeconds(10))
          .build();

  /** The last page's answer. */
  HttpResponse<String> last;

  HttpResponse<String> get(String url) throws IOException, InterruptedException {
    return send(HttpRequest.newBuilder(URI.create(url)).GET());
  }

  /**
   * Posts {@code fields} and the last page's CSRF token to {@code url}, with the Origin of {@code
   * url}, as the browser's form would.
   */
  HttpResponse<String> post(String url, Map<String, String> fields)
      throws IOException, InterruptedException {
    Map<String, String> all = new LinkedHashMap<>(fields);
    all.put("_csrf", csrf());
    URI uri = URI.create(url);
    String body =
        all.entrySet().stream()
            .map(e -> enc(e.getKey()) + "=" + enc(e.getValue()))
            .collect(Collectors.joining("&"));
    return send(
        HttpRequest.newBuilder(uri)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Origin", uri.getScheme() + "://" + uri.getAuthority())
            .POST(HttpRequest.BodyPublishers.ofString(body)));
  }

  /** The CSRF token of the last page. */
  String csrf() {
    Matcher m = CSRF.matcher(last.body());
    if (!m.find()) {
      throw new AssertionError("no CSRF token on " + last.uri() + ":\n" + last.body());
    }
    return m.group(1);
  }

  /** Logs in at the provider: the console's SSO link, then the provider's login form. */
  HttpResponse<String> singleSignOn(String console, String user, String password)
      throws IOException, InterruptedException {
    get(console + OidcLogin.START);
    String form = last.uri().toString();
    if (!form.endsWith("/login")) {
      throw new AssertionError("not the provider's login form: " + form + "\n" + last.body());
    }
    return post(form, Map.of("username", user, "password", password));
  }

  private HttpResponse<String> send(HttpRequest.Builder b)
      throws IOException, InterruptedException {
    last =
        http.send(
            b.header("Accept", "text/html").timeout(Duration.ofSeconds(30)).build(),
            HttpResponse.BodyHandlers.ofString());
    return last;
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }
}
