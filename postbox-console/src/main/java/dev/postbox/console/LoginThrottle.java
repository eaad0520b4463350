package dev.postbox.console;

import io.github.resilience4j.ratelimiter.RateLimiter;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.RateLimiterRegistry;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Duration;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Limits login attempts (POST /login) per user name and per client address with Resilience4j rate
 * limiters (a fixed number per minute, no waiting): a guessed password costs a minute every few
 * tries, for one account and from one address. Over the limit the attempt is answered 429 without
 * checking the password. At most {@value #MAX_KEYS} keys are kept; past that the limiters start
 * over (a flood of names cannot exhaust memory).
 */
final class LoginThrottle extends OncePerRequestFilter {

  static final int MAX_KEYS = 10_000;

  private final RateLimiterConfig config;
  private volatile RateLimiterRegistry limiters;

  LoginThrottle(int attemptsPerMinute) {
    if (attemptsPerMinute < 1) {
      throw new IllegalArgumentException("login attempts per minute must be at least 1");
    }
    this.config =
        RateLimiterConfig.custom()
            .limitForPeriod(attemptsPerMinute)
            .limitRefreshPeriod(Duration.ofMinutes(1))
            .timeoutDuration(Duration.ZERO)
            .build();
    this.limiters = RateLimiterRegistry.of(config);
  }

  @Override
  protected boolean shouldNotFilter(HttpServletRequest request) {
    return !("POST".equals(request.getMethod()) && "/login".equals(ConsoleSecurity.path(request)));
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    String user =
        String.valueOf(request.getParameter("username")).toLowerCase(java.util.Locale.ROOT);
    if (!allowed("user:" + user) || !allowed("ip:" + request.getRemoteAddr())) {
      response.setStatus(429);
      response.setHeader("Retry-After", "60");
      response.setContentType("text/html;charset=UTF-8");
      response
          .getWriter()
          .write(
              "<!DOCTYPE html><html><head><title>Too many attempts</title></head><body>"
                  + "<p>Too many login attempts. Wait a minute, then <a href=\"/login\">try"
                  + " again</a>.</p></body></html>");
      return;
    }
    chain.doFilter(request, response);
  }

  private boolean allowed(String key) {
    RateLimiterRegistry r = limiters;
    if (r.getAllRateLimiters().size() > MAX_KEYS) {
      r = RateLimiterRegistry.of(config);
      limiters = r;
    }
    RateLimiter limiter = r.rateLimiter(key);
    return limiter.acquirePermission();
  }
}
