package dev.postbox.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.postbox.jdbc.MessageTrace;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * How {@code postbox trace} shows a {@link MessageTrace}: a table for people, or JSON (keys {@code
 * message_id}, {@code steps}, {@code notes}). The demo prints its trace example with it too.
 */
public final class TraceOutput {

  private TraceOutput() {}

  /** The trace as JSON: {@code message_id}, {@code steps} (see {@link #steps}), {@code notes}. */
  public static String toJson(MessageTrace trace) throws Exception {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("message_id", trace.messageId().toString());
    out.put("steps", steps(trace));
    out.put("notes", trace.notes());
    return new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(out);
  }

  /**
   * The steps as JSON-ready maps: {@code at}, {@code step}, {@code by}, {@code detail}, attributes.
   */
  public static List<Map<String, Object>> steps(MessageTrace trace) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (MessageTrace.Step s : trace.steps()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("at", s.at().toString());
      m.put("step", s.step());
      m.put("by", s.by());
      m.put("detail", s.detail());
      m.put("attributes", new java.util.TreeMap<>(s.attributes()));
      out.add(m);
    }
    return out;
  }

  /** The trace as a table for people. */
  public static void print(MessageTrace trace, PrintStream out) {
    out.println("message " + trace.messageId());
    if (!trace.found()) {
      out.println("  no postbox table knows this message");
    }
    for (MessageTrace.Step s : trace.steps()) {
      out.printf("  %-27s %-14s %-18s %s%n", s.at(), s.step(), s.by(), s.detail());
    }
    for (String n : trace.notes()) {
      out.println("  note: " + n);
    }
  }
}
