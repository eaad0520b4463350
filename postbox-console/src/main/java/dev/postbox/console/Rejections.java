package dev.postbox.console;

import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/**
 * The answer to a state-changing request the console does not accept (cross-site, or a stale or
 * missing CSRF token): 403 with a page that says so, written without touching the session (the
 * operator stays logged in).
 */
final class Rejections {

  static final String NOT_ACCEPTED = "Request not accepted (cross-site or expired form).";

  private Rejections() {}

  static final String NO_ROLE = "Your single sign-on account has no role in this console.";

  /** A single sign-on login refused for want of a mapped role: 403, not logged in. */
  static void noRole(HttpServletResponse response, String user) throws IOException {
    response.setStatus(HttpServletResponse.SC_FORBIDDEN);
    response.setContentType("text/html;charset=UTF-8");
    response
        .getWriter()
        .write(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>No access · Postbox"
                + " console</title><link rel=\"stylesheet\" href=\"/css/console.css\"></head><body>"
                + "<main><h1>403</h1><p class=\"problem\" id=\"problem\">"
                + NO_ROLE
                + " You are signed in at your provider as <b>"
                + org.springframework.web.util.HtmlUtils.htmlEscape(user)
                + "</b>, but none of your groups is mapped to a console role; ask an administrator"
                + " to add your group to postbox.console.oidc.roles.</p>"
                + "<p><a href=\"/login\">Back to the login</a></p></main></body></html>");
  }

  static void notAccepted(HttpServletResponse response) throws IOException {
    response.setStatus(HttpServletResponse.SC_FORBIDDEN);
    response.setContentType("text/html;charset=UTF-8");
    response
        .getWriter()
        .write(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Not accepted · Postbox"
                + " console</title><link rel=\"stylesheet\" href=\"/css/console.css\"></head><body>"
                + "<main><h1>403</h1><p class=\"problem\" id=\"problem\">"
                + NOT_ACCEPTED
                + " Nothing was done; go back, reload the page and try again.</p>"
                + "<p><a href=\"/\">Back to the dashboard</a></p></main></body></html>");
  }
}
