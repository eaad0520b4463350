package dev.postbox.console;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Refuses a login (POST /login) that {@link LoginThrottle} says must wait: 429 with {@code
 * Retry-After}, the password not checked, the event recorded ({@link SecurityEvents}).
 */
final class LoginThrottleFilter extends OncePerRequestFilter {

  private final LoginThrottle throttle;
  private final SecurityEvents events;

  LoginThrottleFilter(LoginThrottle throttle, SecurityEvents events) {
    this.throttle = throttle;
    this.events = events;
  }

  @Override
  protected boolean shouldNotFilter(HttpServletRequest request) {
    return !("POST".equals(request.getMethod()) && "/login".equals(ConsoleSecurity.path(request)));
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    String user = String.valueOf(request.getParameter("username"));
    Optional<Duration> wait = throttle.wait(request.getRemoteAddr(), user);
    if (wait.isEmpty()) {
      chain.doFilter(request, response);
      return;
    }
    long seconds = Math.max(1, (wait.get().toMillis() + 999) / 1000);
    events.record(
        SecurityEvents.Kind.LOGIN_THROTTLED,
        user,
        request.getRemoteAddr(),
        "login refused for " + seconds + " s after failed attempts");
    response.setStatus(429);
    response.setHeader("Retry-After", Long.toString(seconds));
    response.setContentType("text/html;charset=UTF-8");
    response
        .getWriter()
        .write(
            "<!DOCTYPE html><html><head><title>Too many attempts</title></head><body>"
                + "<p>Too many failed login attempts for this account from this address. Wait "
                + seconds
                + " s, then <a href=\"/login\">try again</a>.</p></body></html>");
  }
}
