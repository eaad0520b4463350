package dev.postbox.console;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.util.Set;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * A state-changing request (anything but GET, HEAD, OPTIONS, TRACE) whose {@code Origin} header
 * names another site than the one it was sent to (the request's server name and port, from {@code
 * Host}, or from {@code X-Forwarded-*} with {@code server.forward-headers-strategy}) is refused
 * with 403 before the CSRF check ({@link Rejections}) and recorded; requests without {@code Origin}
 * (scripts, old browsers) and with the opaque {@code Origin: null} are left to the CSRF token. A
 * browser sends {@code null} for the console's own forms: the pages are served with {@code
 * Referrer-Policy: no-referrer}, under which the Fetch standard serializes a form post's origin as
 * {@code null}, so an opaque origin says nothing about the site that sent the request.
 */
final class OriginCheck extends OncePerRequestFilter {

  private static final Set<String> SAFE = Set.of("GET", "HEAD", "OPTIONS", "TRACE");

  private final SecurityEvents events;

  OriginCheck(SecurityEvents events) {
    this.events = events;
  }

  @Override
  protected boolean shouldNotFilter(HttpServletRequest request) {
    String origin = request.getHeader("Origin");
    return SAFE.contains(request.getMethod()) || origin == null || "null".equals(origin);
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    String origin = request.getHeader("Origin");
    if (sameSite(origin, request.getServerName(), request.getServerPort())) {
      chain.doFilter(request, response);
      return;
    }
    events.record(
        SecurityEvents.Kind.REQUEST_REJECTED,
        ConsoleAccessDenied.who(),
        request.getRemoteAddr(),
        request.getMethod() + " " + ConsoleSecurity.path(request) + " from origin " + origin);
    Rejections.notAccepted(response);
  }

  /** Whether the origin's host and port are those the request was sent to. */
  static boolean sameSite(String origin, String serverName, int serverPort) {
    if (origin == null || "null".equals(origin)) {
      return false;
    }
    try {
      URI o = URI.create(origin);
      if (o.getHost() == null) {
        return false;
      }
      int port =
          o.getPort() != -1 ? o.getPort() : "https".equalsIgnoreCase(o.getScheme()) ? 443 : 80;
      return o.getHost().equalsIgnoreCase(serverName) && port == serverPort;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }
}
