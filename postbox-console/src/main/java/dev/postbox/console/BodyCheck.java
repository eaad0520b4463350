package dev.postbox.console;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Locale;
import java.util.Optional;

/**
 * Whether an edited payload is valid for its content type before it is written as a corrected copy:
 * a JSON type ({@code application/json} or {@code +json}, parameters ignored) must parse as exactly
 * one JSON value (Jackson, the parser Postbox already depends on). Other types are taken as given.
 */
final class BodyCheck {

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private BodyCheck() {}

  /** Why {@code body} is not valid {@code contentType}, or empty when it is. */
  static Optional<String> problem(String body, Optional<String> contentType) {
    if (contentType.isEmpty() || !isJson(contentType.get())) {
      return Optional.empty();
    }
    try {
      JSON.readTree(body);
      if (body.isBlank()) {
        return Optional.of(
            "The payload is empty, which is not valid JSON (" + contentType.get() + ").");
      }
      return Optional.empty();
    } catch (JsonProcessingException e) {
      var at = e.getLocation();
      return Optional.of(
          "The payload is not valid JSON ("
              + contentType.get()
              + ")"
              + (at == null ? "" : " at line " + at.getLineNr() + ", column " + at.getColumnNr())
              + ": "
              + e.getOriginalMessage());
    }
  }

  static boolean isJson(String contentType) {
    String type = contentType.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
    return type.equals("application/json") || type.endsWith("+json");
  }
}
