package dev.postbox.console;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Map;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * A request parameter with a NUL byte (which PostgreSQL refuses in text, so the query would fail as
 * if the database were down) is bad input: 400 naming the parameter, before anything runs.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE)
class MalformedParameters extends OncePerRequestFilter {

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    for (Map.Entry<String, String[]> p : request.getParameterMap().entrySet()) {
      boolean nul = p.getKey().indexOf('\0') >= 0;
      for (String v : p.getValue()) {
        nul |= v.indexOf('\0') >= 0;
      }
      if (nul) {
        response.setStatus(HttpServletResponse.SC_BAD_REQUEST);
        response.setContentType("text/plain;charset=UTF-8");
        response
            .getWriter()
            .write(
                "400: request parameter '"
                    + p.getKey().replace('\0', '?')
                    + "' contains a NUL byte; not accepted.\n");
        return;
      }
    }
    chain.doFilter(request, response);
  }
}
