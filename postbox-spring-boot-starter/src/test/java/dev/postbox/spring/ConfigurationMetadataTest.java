package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.beans.BeanWrapper;
import org.springframework.beans.PropertyAccessorFactory;
import org.springframework.boot.convert.DurationStyle;

/**
 * The generated configuration metadata (what IDEs complete) documents every key, and each default
 * it shows (written in {@code additional-spring-configuration-metadata.json}, since the processor
 * cannot read the library's constants) equals the value the properties start from, which is the
 * library's {@code DEFAULT_*} constant.
 */
class ConfigurationMetadataTest {

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> properties() throws Exception {
    try (InputStream in =
        ConfigurationMetadataTest.class
            .getClassLoader()
            .getResourceAsStream("META-INF/spring-configuration-metadata.json")) {
      assertThat(in).as("generated metadata").isNotNull();
      Map<String, Object> json = new ObjectMapper().readValue(in, Map.class);
      return (List<Map<String, Object>>) json.get("properties");
    }
  }

  @Test
  void everyKeyIsDescribedAndEveryShownDefaultIsTheLibrarysConstant() throws Exception {
    List<String> problems = new ArrayList<>();
    BeanWrapper fresh = PropertyAccessorFactory.forBeanPropertyAccess(new PostboxProperties());
    List<Map<String, Object>> properties = properties();
    assertThat(properties)
        .extracting(p -> p.get("name"))
        .contains("postbox.topics", "postbox.relay.lease-ttl");
    for (Map<String, Object> p : properties) {
      String name = (String) p.get("name");
      if (!(p.get("description") instanceof String d) || d.isBlank()) {
        problems.add(name + " has no description");
      }
      if (!p.containsKey("defaultValue") || name.equals("postbox.topics")) {
        continue;
      }
      Object actual = fresh.getPropertyValue(camel(name.substring("postbox.".length())));
      Object shown = p.get("defaultValue");
      Object expected =
          actual instanceof Duration
              ? DurationStyle.detectAndParse(shown.toString())
              : actual instanceof Enum<?> e
                  ? e.getDeclaringClass()
                      .getEnumConstants()[
                      List.of(e.getDeclaringClass().getEnumConstants()).stream()
                          .map(c -> ((Enum<?>) c).name())
                          .toList()
                          .indexOf(shown.toString().toUpperCase(Locale.ROOT).replace('-', '_'))]
                  : actual instanceof Integer ? ((Number) shown).intValue() : shown;
      if (!expected.equals(actual)) {
        problems.add(name + " shows default " + shown + " but starts from " + actual);
      }
    }
    assertThat(problems).isEmpty();
  }

  private static String camel(String dashed) {
    StringBuilder b = new StringBuilder();
    boolean up = false;
    for (char c : dashed.toCharArray()) {
      if (c == '-') {
        up = true;
      } else {
        b.append(up ? Character.toUpperCase(c) : c);
        up = false;
      }
    }
    return b.toString();
  }
}
