package dev.postbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;

/** The demo's request/reply figures, checked the same on both transports. */
final class PaymentsChecks {

  private PaymentsChecks() {}

  /** The report's payments figures ({@link PaymentsPhase}) and their JSON keys. */
  static void check(DemoReport report, JsonNode json, String output) {
    int wholesale = PoisonAndReplay.WHOLESALE_ORDERS;
    int answered = wholesale - PaymentsPhase.HELD + PaymentsPhase.RESENT;
    assertThat(report.paymentsCrashes()).as(output).isEqualTo(1);
    assertThat(report.requestsResent()).isEqualTo(PaymentsPhase.RESENT);
    assertThat(report.requestsSent()).as(output).isEqualTo(answered + PaymentsPhase.HELD);
    assertThat(report.repliesReceived()).as(output).isEqualTo(answered);
    assertThat(report.requestTimeouts()).as(output).isEqualTo(PaymentsPhase.HELD);
    assertThat(report.lateReplies()).as(output).isEqualTo(PaymentsPhase.HELD);
    assertThat(report.duplicateCharges()).as(output).isZero();
    assertThat(report.wholesaleOrdersCharged()).as(output).isEqualTo(wholesale);
    assertThat(report.rrP50Ms()).isPositive();
    assertThat(report.rrP99Ms()).isGreaterThanOrEqualTo(report.rrP50Ms());
    for (String key :
        new String[] {
          "requests_sent",
          "replies_received",
          "duplicate_charges",
          "request_timeouts",
          "late_replies",
          "rr_p50_ms",
          "rr_p99_ms"
        }) {
      assertThat(json.has(key)).as(key).isTrue();
    }
    assertThat(json.get("duplicate_charges").asLong()).isZero();
    // the trace of a charge request shows the payments' inbox record with the stored reply
    assertThat(output).contains("trace of a charge request").contains("stored result");
    assertThat(json.get("requests_sent").asLong()).isEqualTo(report.requestsSent());
  }
}
