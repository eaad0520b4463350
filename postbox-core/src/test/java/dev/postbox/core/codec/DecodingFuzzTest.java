package dev.postbox.core.codec;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Fuzzes the payload half of decoding ({@link JsonCodec}, {@link EventTypes} with upcasters):
 * whatever the bytes, content type, schema version and upcaster behaviour, decoding returns an
 * event or {@link Decoded.UnknownType}, or throws a {@link DecodingException} (permanent, which the
 * engine dead-letters as {@code PERMANENT}); no other exception escapes.
 */
class DecodingFuzzTest {

  record Order(String sku, int quantity, Optional<Instant> at, List<String> tags) {}

  /** Upcasters that misbehave on demand, driven by the payload: throw, return null, change type. */
  private static final EventTypes TYPES =
      EventTypes.builder()
          .register("order", 4, Order.class)
          .upcaster("order", 1, Upcaster.objects(o -> o.put("quantity", o.path("qty").asInt())))
          .upcaster(
              "order",
              2,
              p -> {
                if (p.has("boom")) {
                  throw new IllegalStateException("upcaster bug");
                }
                if (p.has("nothing")) {
                  return null;
                }
                if (p.has("array")) {
                  return p.path("array");
                }
                return p;
              })
          .upcaster(
              "order",
              3,
              Upcaster.objects(o -> {
                ObjectNode copy = o.deepCopy();
                copy.remove("qty");
                return copy;
              }))
          .build();

  @Property(tries = 1_500)
  void eventTypesDecodeAnyPayloadToAnEventOrADecodingException(
      @ForAll("payloads") byte[] payload,
      @ForAll("contentTypes") String contentType,
      @ForAll("versions") int version,
      @ForAll("types") String type) {
    Message m =
        Message.builder("t", type)
            .schemaVersion(version)
            .payload(new Payload(payload, contentType))
            .build();
    try {
      Decoded<Object> d = TYPES.decode(m);
      assertThat(d).isNotNull();
      if (d instanceof Decoded.Event<Object> e) {
        assertThat(e.value()).isInstanceOf(Order.class);
      }
    } catch (DecodingException e) {
      assertThat(e.messageId()).contains(m.id());
      assertThat(e.getMessage()).isNotBlank();
    }
  }

  @Property(tries = 1_500)
  void jsonCodecDecodesAnyBytesOrThrowsADecodingException(@ForAll("payloads") byte[] payload) {
    JsonCodec codec = TYPES.codec();
    for (Class<?> target : List.of(Order.class, Map.class, String.class, int[].class)) {
      try {
        assertThat(codec.decode(payload, target)).isNotNull();
      } catch (DecodingException expected) {
        // classified
      }
    }
    try {
      assertThat(codec.readTree(payload)).isNotNull();
    } catch (DecodingException expected) {
      // classified
    }
  }

  @Provide
  Arbitrary<byte[]> payloads() {
    List<String> seeds =
        List.of(
            "{\"sku\":\"a\",\"quantity\":1,\"at\":\"2024-05-01T10:15:30Z\",\"tags\":[\"x\"]}",
            "{\"sku\":\"a\",\"qty\":2}",
            "{\"sku\":\"a\",\"qty\":2,\"boom\":1}",
            "{\"sku\":\"a\",\"qty\":2,\"nothing\":1}",
            "{\"sku\":\"a\",\"qty\":2,\"array\":[1,2]}",
            "{\"sku\":null,\"quantity\":99999999999999999999,\"at\":\"yesterday\"}",
            "[1,2,3]",
            "null",
            "\"text\"",
            "{\"tags\":{\"a\":1}}",
            "{\"sku\":\"\\ud800\",\"quantity\":1}");
    Arbitrary<byte[]> seed = Arbitraries.of(seeds).map(s -> s.getBytes(StandardCharsets.UTF_8));
    Arbitrary<byte[]> mutated =
        Combinators.combine(seed, Arbitraries.integers().between(0, 200), Arbitraries.bytes())
            .as((b, at, x) -> {
              byte[] c = b.clone();
              c[at % c.length] = x;
              return c;
            });
    Arbitrary<byte[]> truncated =
        Combinators.combine(seed, Arbitraries.integers().between(0, 200))
            .as((b, n) -> java.util.Arrays.copyOf(b, Math.min(n, b.length)));
    Arbitrary<byte[]> deep =
        Arbitraries.integers()
            .between(1, 5_000)
            .map(n -> ("[".repeat(n) + "]".repeat(n)).getBytes(StandardCharsets.UTF_8));
    return Arbitraries.oneOf(
        seed, mutated, truncated, deep, Arbitraries.bytes().array(byte[].class).ofMaxSize(64));
  }

  @Provide
  Arbitrary<String> contentTypes() {
    return Arbitraries.of(
        "application/json",
        "application/json; charset=utf-8",
        "application/json; charset=latin1",
        "application/vnd.acme+json",
        "text/plain",
        "application/octet-stream",
        "APPLICATION/JSON",
        ";;;",
        "+json",
        "application/json; charset=\"");
  }

  @Provide
  Arbitrary<Integer> versions() {
    return Arbitraries.oneOf(
        Arbitraries.integers().between(1, 6), Arbitraries.of(Integer.MAX_VALUE));
  }

  @Provide
  Arbitrary<String> types() {
    return Arbitraries.of("order", "order", "order", "other");
  }
}
