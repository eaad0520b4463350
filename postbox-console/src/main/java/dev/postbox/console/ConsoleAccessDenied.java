package dev.postbox.console;

import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.springframework.security.access.AccessDeniedException;
import org.springframework.security.authentication.AnonymousAuthenticationToken;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.security.web.access.AccessDeniedHandler;
import org.springframework.security.web.access.AccessDeniedHandlerImpl;
import org.springframework.security.web.csrf.CsrfException;

/**
 * What a refused request gets, by cause: a stale session (an expired one clicking Replay) goes to
 * the login page; a missing or wrong CSRF token otherwise (a cross-site POST, an old form) is 403
 * "request not accepted" without touching the session; a role that may not do it is 403 "Not
 * allowed for your role". The last two are recorded ({@link SecurityEvents}).
 */
final class ConsoleAccessDenied implements AccessDeniedHandler {

  private final SecurityEvents events;
  private final AccessDeniedHandler forRole = new AccessDeniedHandlerImpl();

  ConsoleAccessDenied(SecurityEvents events) {
    this.events = events;
  }

  @Override
  public void handle(
      HttpServletRequest request, HttpServletResponse response, AccessDeniedException denied)
      throws IOException, ServletException {
    String what = request.getMethod() + " " + ConsoleSecurity.path(request);
    if (denied instanceof CsrfException) {
      if (request.getRequestedSessionId() != null && !request.isRequestedSessionIdValid()) {
        response.sendRedirect(request.getContextPath() + "/login?expired");
        return;
      }
      events.record(
          SecurityEvents.Kind.REQUEST_REJECTED,
          who(),
          request.getRemoteAddr(),
          what + ": " + denied.getMessage());
      Rejections.notAccepted(response);
      return;
    }
    events.record(SecurityEvents.Kind.ACCESS_DENIED, who(), request.getRemoteAddr(), what);
    forRole.handle(request, response, denied);
  }

  /** The logged-in user's name, or "anonymous". */
  static String who() {
    Authentication a = SecurityContextHolder.getContext().getAuthentication();
    return a == null || a instanceof AnonymousAuthenticationToken || !a.isAuthenticated()
        ? "anonymous"
        : a.getName();
  }
}
