package dev.postbox.console;

import dev.postbox.core.PostboxException;
import jakarta.servlet.http.HttpServletResponse;
import java.util.NoSuchElementException;
import org.springframework.security.access.AccessDeniedException;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;

/**
 * The operations API's exceptions as HTTP answers (as its Javadoc asks of a front end): unknown id
 * 404, wrong state 409, bad input 400, database 503 (with the banner "database unreachable since"
 * when its circuit is open); access denied stays Spring Security's 403.
 */
@ControllerAdvice
class ErrorAdvice {

  private final Health health;

  ErrorAdvice(Health health) {
    this.health = health;
  }

  @ExceptionHandler(AccessDeniedException.class)
  void denied(AccessDeniedException e) {
    throw e;
  }

  @ExceptionHandler(NoSuchElementException.class)
  String notFound(NoSuchElementException e, HttpServletResponse response, Model model) {
    return page(404, e, response, model);
  }

  @ExceptionHandler(IllegalStateException.class)
  String conflict(IllegalStateException e, HttpServletResponse response, Model model) {
    return page(409, e, response, model);
  }

  @ExceptionHandler(IllegalArgumentException.class)
  String badInput(IllegalArgumentException e, HttpServletResponse response, Model model) {
    return page(400, e, response, model);
  }

  @ExceptionHandler(PostboxException.class)
  String failed(PostboxException e, HttpServletResponse response, Model model) {
    if (lostTheDatabase(e)) {
      // a connection handed out before the database went away failed mid-query: the pool did not
      // see it, so the circuit learns it here
      health.database().failed(e);
    }
    if (health.isDatabaseDown()) {
      return page(
          503,
          "The database is unreachable (since "
              + health.getDatabaseDownSince()
              + "): "
              + e.getMessage()
              + ".",
          response,
          model);
    }
    return page(503, e, response, model);
  }

  /**
   * Whether {@code e} was caused by losing the database: an SQLSTATE of class 08 (connection
   * exception) or 57P (operator intervention: the server shutting down or crashed), or an I/O error
   * reading from it.
   */
  static boolean lostTheDatabase(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof java.sql.SQLException s && s.getSQLState() != null) {
        String state = s.getSQLState();
        if (state.startsWith("08") || state.startsWith("57P")) {
          return true;
        }
      }
    }
    return false;
  }

  private String page(int status, Exception e, HttpServletResponse response, Model model) {
    return page(status, e.getMessage(), response, model);
  }

  private String page(int status, String message, HttpServletResponse response, Model model) {
    response.setStatus(status);
    model.addAttribute("status", status);
    model.addAttribute("message", message);
    model.addAttribute("health", health);
    return "problem";
  }
}
