package dev.postbox.core;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class DeadLettersTest {

  @Test
  void errorsDifferingOnlyInNumbersUuidsAndHexShareAFingerprint() {
    String a =
        DeadLetters.fingerprint(
            "orders",
            new IllegalStateException(
                "order 42 of customer 3f2b8c1e-1111-4a2b-9c3d-0123456789ab: amount 10.50,"
                    + " trace 00ff12ab34cd, at 0x7ffe"));
    String b =
        DeadLetters.fingerprint(
            "orders",
            new IllegalStateException(
                "order 7 of customer 9e0d2f4a-2222-4b3c-8d4e-abcdef012345: amount 999.01,"
                    + " trace deadbeef0042, at 0x1"));
    assertThat(a).isEqualTo(b).hasSize(16).matches("[0-9a-f]{16}");
  }

  @Test
  void differentClassesMessagesOrTopicsDoNotShareAFingerprint() {
    String base = DeadLetters.fingerprint("orders", new IllegalStateException("order 42 bad"));
    assertThat(DeadLetters.fingerprint("orders", new IllegalArgumentException("order 42 bad")))
        .isNotEqualTo(base);
    assertThat(DeadLetters.fingerprint("orders", new IllegalStateException("order 42 late")))
        .isNotEqualTo(base);
    assertThat(DeadLetters.fingerprint("payments", new IllegalStateException("order 42 bad")))
        .isNotEqualTo(base);
    assertThat(DeadLetters.fingerprint("orders", new IllegalStateException("order 43 bad")))
        .isEqualTo(base);
  }

  @Test
  void normalisationKeepsOrdinaryWordsAndHandlesNullMessages() {
    assertThat(DeadLetters.normalise("deadline accepted for facade 12"))
        .isEqualTo("deadline accepted for facade <n>");
    assertThat(DeadLetters.normalise("id 3f2b8c1e-1111-4a2b-9c3d-0123456789ab"))
        .isEqualTo("id <uuid>");
    assertThat(DeadLetters.normalise("hash 0a1b2c3d4e5f, ptr 0xFF"))
        .isEqualTo("hash <hex>, ptr <hex>");
    assertThat(DeadLetters.fingerprint("t", new RuntimeException()))
        .isEqualTo(DeadLetters.fingerprint("t", new RuntimeException((String) null)));
  }

  @Test
  void stackTraceIsText() {
    assertThat(DeadLetters.stackTrace(new IllegalStateException("boom")))
        .startsWith("java.lang.IllegalStateException: boom")
        .contains("DeadLettersTest");
  }
}
