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
