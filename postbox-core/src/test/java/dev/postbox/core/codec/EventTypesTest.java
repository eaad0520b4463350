package dev.postbox.core.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.InstanceOfAssertFactories.type;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.PermanentMessageException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class EventTypesTest {

  record Money(BigDecimal value, String currency) {}

  /** Version 2: the amount carries its currency. */
  record PaymentReceived(String paymentId, Money amount) {}

  /** Version 3: the payment id was renamed and a channel added. */
  record PaymentReceivedV3(String id, Money amount, String channel) {}

  record OrderShipped(String orderId, Optional<String> carrier) {}

  /** v1 {"amount":10} to v2 {"amount":{"value":10,"currency":"EUR"}}. */
  static final Upcaster AMOUNT_TO_MONEY =
      Upcaster.objects(v1 -> {
        ObjectNode money = v1.objectNode();
        money.set("value", v1.get("amount"));
        money.put("currency", "EUR");
        v1.set("amount", money);
        return v1;
      });

  /** v2 to v3: paymentId becomes id, channel defaults to "card". */
  static final Upcaster RENAME_ID =
      Upcaster.objects(v2 -> {
        v2.set("id", v2.remove("paymentId"));
        v2.put("channel", "card");
        return v2;
      });

  private static Message message(String type, int version, String json) {
    return Message.builder("payments", type).schemaVersion(version).jsonPayload(json).build();
  }

  private static EventTypes v2Types() {
    return EventTypes.builder()
        .register("payment.received", 2, PaymentReceived.class)
        .upcaster("payment.received", 1, AMOUNT_TO_MONEY)
        .register("order.shipped", 1, OrderShipped.class)
        .build();
  }

  private static Object valueOf(Decoded<Object> decoded) {
    assertThat(decoded).isInstanceOf(Decoded.Event.class);
    return ((Decoded.Event<Object>) decoded).value();
  }

  @Test
  void roundTripsThroughNewMessageAndDecode() {
    EventTypes types = v2Types();
    PaymentReceived event = new PaymentReceived("p-1", new Money(new BigDecimal("10.5"), "USD"));

    Message m = types.newMessage("payments", event).key("acct-1").build();

    assertThat(m.type()).isEqualTo("payment.received");
    assertThat(m.schemaVersion()).isEqualTo(2);
    assertThat(m.payload().contentType()).isEqualTo(Payload.JSON);
    assertThat(types.decode(m)).isEqualTo(new Decoded.Event<Object>("payment.received", 2, event));
  }

  @Test
  void ignoresUnknownFieldsAndReadsMissingOptionalsAsEmpty() {
    Message m = message("order.shipped", 1, "{\"orderId\":\"o-1\",\"weightKg\":3}");
    assertThat(valueOf(v2Types().decode(m))).isEqualTo(new OrderShipped("o-1", Optional.empty()));
  }

  @Test
  void upcastsVersion1ToVersion2() {
    Message v1 = message("payment.received", 1, "{\"paymentId\":\"p-1\",\"amount\":10}");

    Decoded<Object> decoded = v2Types().decode(v1);

    assertThat(decoded)
        .isEqualTo(
            new Decoded.Event<Object>(
                "payment.received",
                2,
                new PaymentReceived("p-1", new Money(new BigDecimal("10"), "EUR"))));
  }

  @Test
  void chainsUpcastersFromVersion1ThroughVersion3() {
    AtomicInteger calls = new AtomicInteger();
    EventTypes types =
        EventTypes.builder()
            .register("payment.received", 3, PaymentReceivedV3.class)
            .upcaster(
                "payment.received",
                2,
                p -> {
                  calls.incrementAndGet();
                  return RENAME_ID.upcast(p);
                })
            .upcaster("payment.received", 1, AMOUNT_TO_MONEY) // order of registration is free
            .build();
    PaymentReceivedV3 expected =
        new PaymentReceivedV3("p-1", new Money(new BigDecimal("10"), "EUR"), "card");

    assertThat(
            valueOf(
                types.decode(
                    message("payment.received", 1, "{\"paymentId\":\"p-1\",\"amount\":10}"))))
        .isEqualTo(expected);
    assertThat(
            valueOf(
                types.decode(
                    message(
                        "payment.received",
                        2,
                        "{\"paymentId\":\"p-1\",\"amount\":{\"value\":10,\"currency\":\"EUR\"}}"))))
        .isEqualTo(expected);
    assertThat(
            valueOf(
                types.decode(
                    message(
                        "payment.received",
                        3,
                        "{\"id\":\"p-1\",\"amount\":{\"value\":10,\"currency\":\"EUR\"},"
                            + "\"channel\":\"card\"}"))))
        .isEqualTo(expected);
    assertThat(calls).hasValue(2); // v1 and v2 went through the 2->3 upcaster, v3 did not
  }

  @Test
  void versionWithoutUpcasterPathIsPermanent() {
    EventTypes types =
        EventTypes.builder()
            .register("payment.received", 3, PaymentReceivedV3.class)
            .upcaster("payment.received", 2, RENAME_ID)
            .build();
    Message v1 = message("payment.received", 1, "{\"paymentId\":\"p-1\",\"amount\":10}");

    assertThatThrownBy(() -> types.decode(v1))
        .isInstanceOf(PermanentMessageException.class)
        .hasMessageContaining("no upcaster from schema version 1 to 2")
        .asInstanceOf(type(DecodingException.class))
        .satisfies(e -> assertThat(e.messageId()).contains(v1.id()))
        .satisfies(e -> assertThat(e.type()).contains("payment.received"))
        .satisfies(e -> assertThat(e.schemaVersion()).hasValue(1))
        .satisfies(e -> assertThat(e.rawBytes()).isEqualTo(v1.payload().bytes()));
  }

  @Test
  void versionNewerThanKnownIsPermanent() {
    Message v3 = message("payment.received", 3, "{\"id\":\"p-1\"}");
    assertThatThrownBy(() -> v2Types().decode(v3))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("newer than the current version 2");
  }

  @Test
  void garbageBytesOfAKnownTypeAreADecodingExceptionWithTheExactBytes() {
    byte[] garbage = {'{', '"', 'a', (byte) 0xFE, 0x01, 0x7F};
    Message m =
        Message.builder("orders", "order.shipped")
            .payload(new Payload(garbage, Payload.JSON))
            .build();

    assertThatThrownBy(() -> v2Types().decode(m))
        .asInstanceOf(type(DecodingException.class))
        .satisfies(e -> assertThat(e.rawBytes()).isEqualTo(garbage))
        .satisfies(e -> assertThat(e.messageId()).contains(m.id()))
        .satisfies(e -> assertThat(e.getCause()).isNotNull());
  }

  @Test
  void garbageBytesOnTheUpcastingPathToo() {
    Message m = message("payment.received", 1, "not json");
    assertThatThrownBy(() -> v2Types().decode(m))
        .asInstanceOf(type(DecodingException.class))
        .satisfies(
            e -> assertThat(e.rawBytes()).isEqualTo("not json".getBytes(StandardCharsets.UTF_8)))
        .satisfies(e -> assertThat(e.schemaVersion()).hasValue(1));
  }

  @Test
  void knownTypeWithANonJsonContentTypeIsPermanent() {
    Message m =
        Message.builder("orders", "order.shipped")
            .payload(
                new Payload("{\"orderId\":\"o\"}".getBytes(StandardCharsets.UTF_8), "text/plain"))
            .build();
    assertThatThrownBy(() -> v2Types().decode(m))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("is not JSON")
        .as("header values are not copied into messages")
        .hasMessageNotContaining("text/plain");
  }

  @Test
  void unknownTypeIsAnOutcomeNotAnException() {
    Message m =
        Message.builder("orders", "order.cancelled")
            .schemaVersion(7)
            .payload(Payload.of(new byte[] {(byte) 0xFF})) // not even JSON: never read
            .build();

    Decoded<Object> decoded = v2Types().decode(m);

    assertThat(decoded).isEqualTo(new Decoded.UnknownType<Object>("order.cancelled", 7));
  }

  @Test
  void failingOrNullReturningUpcastersArePermanent() {
    RuntimeException boom = new IllegalStateException("boom");
    EventTypes throwing =
        EventTypes.builder()
            .register("payment.received", 2, PaymentReceived.class)
            .upcaster(
                "payment.received",
                1,
                p -> {
                  throw boom;
                })
            .build();
    EventTypes returningNull =
        EventTypes.builder()
            .register("payment.received", 2, PaymentReceived.class)
            .upcaster("payment.received", 1, p -> null)
            .build();
    Message v1 = message("payment.received", 1, "{\"amount\":10}");
    Message v1Array = message("payment.received", 1, "[10]");

    assertThatThrownBy(() -> throwing.decode(v1))
        .isInstanceOf(DecodingException.class)
        .hasCause(boom);
    assertThatThrownBy(() -> returningNull.decode(v1))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("returned null");
    assertThatThrownBy(() -> v2Types().decode(v1Array))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("expected a JSON object");
  }

  @Test
  void decodedWorksWithPatternMatching() {
    EventTypes types = v2Types();
    Message shipped = message("order.shipped", 1, "{\"orderId\":\"o-1\",\"carrier\":\"DHL\"}");
    Message unknown = message("order.cancelled", 1, "{}");

    assertThat(describe(types.decode(shipped))).isEqualTo("shipped o-1 by DHL (v1)");
    assertThat(describe(types.decode(unknown))).isEqualTo("ignored order.cancelled");
  }

  private static String describe(Decoded<Object> decoded) {
    return switch (decoded) {
      case Decoded.Event(var type, var version, OrderShipped s) ->
          "shipped " + s.orderId() + " by " + s.carrier().orElse("?") + " (v" + version + ")";
      case Decoded.Event<Object> other -> "other " + other.type();
      case Decoded.UnknownType<Object> u -> "ignored " + u.type();
    };
  }

  @Test
  void findsRegistrationsByTypeAndClass() {
    EventTypes types = v2Types();
    assertThat(types.find("payment.received"))
        .contains(new EventTypes.Registration("payment.received", 2, PaymentReceived.class));
    assertThat(types.find(OrderShipped.class).map(EventTypes.Registration::type))
        .contains("order.shipped");
    assertThat(types.find("nope")).isEmpty();
    assertThat(types.find(String.class)).isEmpty();
    assertThat(types.types()).containsExactlyInAnyOrder("payment.received", "order.shipped");
  }

  @Test
  void newMessageRejectsUnregisteredClasses() {
    assertThatThrownBy(() -> v2Types().newMessage("payments", new Money(BigDecimal.ONE, "EUR")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(Money.class.getName());
  }

  // --- builder validation -------------------------------------------------------------------

  @Test
  void rejectsDuplicateRegistration() {
    var b =
        EventTypes.builder()
            .register("payment.received", 1, PaymentReceived.class)
            .register("payment.received", 2, PaymentReceivedV3.class);
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'payment.received' is registered twice");
  }

  @Test
  void rejectsTheSameClassForTwoTypes() {
    var b =
        EventTypes.builder()
            .register("payment.received", 1, PaymentReceived.class)
            .register("payment.booked", 1, PaymentReceived.class);
    assertThatThrownBy(b::build).hasMessageContaining("registered for both");
  }

  @Test
  void rejectsVersionBelowOneAndBlankNames() {
    var b =
        EventTypes.builder()
            .register("payment.received", 0, PaymentReceived.class)
            .register(" ", 1, OrderShipped.class);
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("version must be >= 1, was 0")
        .hasMessageContaining("must not be blank");
  }

  @Test
  void rejectsAGapInTheUpcasterChain() {
    var b =
        EventTypes.builder()
            .register("payment.received", 4, PaymentReceivedV3.class)
            .upcaster("payment.received", 1, AMOUNT_TO_MONEY)
            .upcaster("payment.received", 3, RENAME_ID);
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("gap in upcaster chain, no upcaster from version 2 to 3");
  }

  @Test
  void rejectsAChainThatStopsBeforeTheCurrentVersion() {
    var b =
        EventTypes.builder()
            .register("payment.received", 3, PaymentReceivedV3.class)
            .upcaster("payment.received", 1, AMOUNT_TO_MONEY);
    assertThatThrownBy(b::build).hasMessageContaining("no upcaster from version 2 to 3");
  }

  @Test
  void rejectsMisplacedAndDuplicateUpcasters() {
    assertThatThrownBy(() ->
            EventTypes.builder()
                .register("payment.received", 2, PaymentReceived.class)
                .upcaster("payment.received", 2, RENAME_ID)
                .build())
        .hasMessageContaining("from version 2: must be from 1 to 1");
    assertThatThrownBy(() ->
            EventTypes.builder()
                .register("payment.received", 2, PaymentReceived.class)
                .upcaster("payment.received", 0, RENAME_ID)
                .build())
        .hasMessageContaining("from version 0");
    assertThatThrownBy(() ->
            EventTypes.builder()
                .register("payment.received", 2, PaymentReceived.class)
                .upcaster("payment.received", 1, AMOUNT_TO_MONEY)
                .upcaster("payment.received", 1, AMOUNT_TO_MONEY)
                .build())
        .hasMessageContaining("from version 1 is registered twice");
    assertThatThrownBy(
            () -> EventTypes.builder().upcaster("payment.refunded", 1, AMOUNT_TO_MONEY).build())
        .hasMessageContaining("'payment.refunded', which is not registered");
  }

  @Test
  void reportsEveryProblemAtOnce() {
    var b =
        EventTypes.builder()
            .register("a", 0, PaymentReceived.class)
            .register("b", 1, OrderShipped.class)
            .register("b", 1, PaymentReceivedV3.class)
            .upcaster("c", 1, RENAME_ID);
    assertThatThrownBy(b::build)
        .hasMessageContaining("'a': version must be >= 1")
        .hasMessageContaining("'b' is registered twice")
        .hasMessageContaining("'c', which is not registered");
  }

  @Test
  void rejectsNullsImmediately() {
    var b = EventTypes.builder();
    assertThatThrownBy(() -> b.register(null, 1, OrderShipped.class))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> b.register("x", 1, null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> b.upcaster("x", 1, null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> b.codec(null)).isInstanceOf(NullPointerException.class);
  }
}
