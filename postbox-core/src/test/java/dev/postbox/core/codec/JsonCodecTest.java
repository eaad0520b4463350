package dev.postbox.core.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.InstanceOfAssertFactories.type;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import dev.postbox.core.DecodingException;
import dev.postbox.core.Payload;
import dev.postbox.core.PermanentMessageException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class JsonCodecTest {

  record Line(String sku, int quantity) {}

  record OrderPlaced(
      String orderId,
      BigDecimal total,
      Instant placedAt,
      LocalDate deliveryDate,
      OffsetDateTime promisedAt,
      List<Line> lines,
      Optional<String> note) {}

  private final JsonCodec codec = JsonCodec.create();

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static OrderPlaced sample() {
    return new OrderPlaced(
        "o-1",
        new BigDecimal("12.50"),
        Instant.parse("2024-05-01T10:15:30.123456Z"),
        LocalDate.parse("2024-05-03"),
        OffsetDateTime.of(2024, 5, 3, 9, 0, 0, 0, ZoneOffset.ofHours(2)),
        List.of(new Line("a", 1), new Line("b", 2)),
        Optional.empty());
  }

  @Test
  void roundTripsARecord() {
    OrderPlaced order = sample();
    Payload payload = codec.encode(order);
    assertThat(payload.contentType()).isEqualTo(Payload.JSON);
    assertThat(codec.decode(payload, OrderPlaced.class)).isEqualTo(order);
  }

  @Test
  void writesDatesAsIsoStrings() {
    String json = codec.encode(sample()).asString();
    assertThat(json)
        .contains("\"placedAt\":\"2024-05-01T10:15:30.123456Z\"")
        .contains("\"deliveryDate\":\"2024-05-03\"")
        .contains("\"promisedAt\":\"2024-05-03T09:00:00+02:00\"");
  }

  @Test
  void aContentTypeOfOnlySeparatorsIsNotJsonRatherThanACrash() {
    // found by DecodingFuzzTest: ";;;".split(";") is empty, and isJson read element 0
    assertThat(JsonCodec.isJson(";;;")).isFalse();
    assertThat(JsonCodec.isJson(";")).isFalse();
    assertThat(JsonCodec.isJson("")).isFalse();
    assertThatThrownBy(() -> codec.decode(new Payload(utf8("{}"), ";;;"), Line.class))
        .isInstanceOf(DecodingException.class);
  }

  @Test
  void ignoresUnknownFields() {
    byte[] json = utf8("{\"sku\":\"a\",\"quantity\":3,\"colour\":\"red\",\"extra\":{\"x\":[1,2]}}");
    assertThat(codec.decode(json, Line.class)).isEqualTo(new Line("a", 3));
  }

  @Test
  void garbageIsAPermanentDecodingExceptionWithTheExactBytes() {
    byte[] garbage = {(byte) 0xFF, 0x00, '{', 'x', (byte) 0xC3};
    assertThatThrownBy(() -> codec.decode(Payload.json(new String(garbage)), Line.class))
        .isInstanceOf(PermanentMessageException.class);
    assertThatThrownBy(() -> codec.decode(garbage, Line.class))
        .asInstanceOf(type(DecodingException.class))
        .satisfies(e -> assertThat(e.rawBytes()).isEqualTo(garbage))
        .satisfies(e -> assertThat(e.getCause()).isNotNull());
  }

  @Test
  void trailingGarbageEmptyInputAndNullAreRejected() {
    assertThatThrownBy(() -> codec.decode(utf8("{\"sku\":\"a\"} trailing"), Line.class))
        .isInstanceOf(DecodingException.class);
    assertThatThrownBy(() -> codec.decode(new byte[0], Line.class))
        .isInstanceOf(DecodingException.class);
    assertThatThrownBy(() -> codec.decode(utf8("null"), Line.class))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("null");
    assertThatThrownBy(() -> codec.readTree(new byte[0])).isInstanceOf(DecodingException.class);
    assertThatThrownBy(() -> codec.readTree(utf8("[1] [2]"))).isInstanceOf(DecodingException.class);
  }

  @Test
  void jsonOfTheWrongShapeIsRejected() {
    assertThatThrownBy(
            () -> codec.decode(utf8("{\"sku\":\"a\",\"quantity\":\"many\"}"), Line.class))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining(Line.class.getName());
  }

  @Test
  void rejectsPayloadsThatAreNotJsonByContentType() {
    Payload xml = new Payload(utf8("{\"sku\":\"a\",\"quantity\":1}"), "application/xml");
    assertThatThrownBy(() -> codec.decode(xml, Line.class))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("is not JSON")
        .as("header values are not copied into messages")
        .hasMessageNotContaining("application/xml");
  }

  @Test
  void recognisesJsonContentTypes() {
    assertThat(JsonCodec.isJson("application/json")).isTrue();
    assertThat(JsonCodec.isJson("Application/JSON; charset=UTF-8")).isTrue();
    assertThat(JsonCodec.isJson("application/vnd.acme.order+json")).isTrue();
    assertThat(JsonCodec.isJson("application/json; charset=iso-8859-1")).isFalse();
    assertThat(JsonCodec.isJson("application/octet-stream")).isFalse();
    assertThat(JsonCodec.isJson("text/plain")).isFalse();
    assertThat(JsonCodec.isJson("+json")).isFalse();
  }

  @Test
  void usesACopyOfAUserMapperKeepingItsSettingsButEnforcingTheContract() {
    ObjectMapper mine =
        new ObjectMapper()
            .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
    JsonCodec custom = JsonCodec.using(mine);

    record Stamp(String orderId, Instant at) {}
    Stamp stamp = new Stamp("o-1", Instant.parse("2024-05-01T10:15:30Z"));
    String json = custom.encode(stamp).asString();
    assertThat(json).contains("\"order_id\":\"o-1\""); // the user's naming strategy is kept
    assertThat(
            custom.decode(
                utf8(
                    "{\"order_id\":\"o-1\",\"at\":"
                        + "\"2024-05-01T10:15:30Z\""
                        + ",\"unknown\":1}"),
                Stamp.class))
        .isEqualTo(stamp); // unknown fields tolerated, java.time supported
    // the user's mapper is untouched
    assertThat(mine.isEnabled(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)).isTrue();
    assertThat(mine.getRegisteredModuleIds()).isEmpty();
  }

  @Test
  void unencodableObjectsThrowEncodingException() {
    assertThatThrownBy(() -> codec.encode(new Object()))
        .isInstanceOf(EncodingException.class)
        .isNotInstanceOf(PermanentMessageException.class)
        .hasMessageContaining("java.lang.Object");
  }
}
