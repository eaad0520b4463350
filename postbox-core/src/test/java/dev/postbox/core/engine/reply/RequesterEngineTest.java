package dev.postbox.core.engine.reply;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.reply.Reply;
import dev.postbox.core.reply.RequestFailedException;
import dev.postbox.core.reply.RequestReplyHeaders;
import dev.postbox.core.reply.RequestTimeoutException;
import dev.postbox.core.reply.RequesterBusyException;
import dev.postbox.core.reply.RequesterStats;
import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * The requester's correlation on fake time: replies to their callers, timeouts naming the request,
 * late, duplicate and unknown replies, the in-flight bound, send failures and close.
 */
class RequesterEngineTest {

  private final FakeTime time = FakeTime.create();
  private final List<Message> sent = new CopyOnWriteArrayList<>();
  private final List<Reply> late = new CopyOnWriteArrayList<>();
  private CompletableFuture<Void> nextSend = CompletableFuture.completedFuture(null);

  private final RequestTransport transport =
      new RequestTransport() {
        @Override
        public String replyAddress() {
          return "replies-of-a";
        }

        @Override
        public CompletableFuture<Void> send(Message request) {
          sent.add(request);
          return nextSend;
        }
      };

  private static Message request(String key) {
    return Message.builder("payments", "charge.authorise").key(key).jsonPayload("{}").build();
  }

  private static Message replyTo(Message request, String body) {
    return Message.builder("replies", "charge.authorised")
        .causedBy(request)
        .jsonPayload(body)
        .build();
  }

  @Test
  void eachReplyGoesToTheCallerWhoseRequestItAnswers() throws Exception {
    RequesterEngine r = running(10);
    Message a = request("o-1");
    Message b = request("o-2");
    CompletableFuture<Reply> fa = r.request(a, Duration.ofSeconds(5));
    CompletableFuture<Reply> fb = r.request(b, Duration.ofSeconds(5));

    assertThat(sent)
        .extracting(m -> m.correlationId().orElseThrow())
        .containsExactly(a.id().toString(), b.id().toString());
    assertThat(sent)
        .allSatisfy(
            m -> assertThat(m.header(RequestReplyHeaders.REPLY_TO)).contains("replies-of-a"));

    assertThat(r.replyReceived(replyTo(b, "\"b\""))).isEqualTo(PendingRequests.Match.ANSWERED);
    assertThat(fa).isNotDone();
    assertThat(fb.get().payload().asString()).isEqualTo("\"b\"");
    assertThat(fb.get().requestId()).isEqualTo(b.id());
    r.replyReceived(replyTo(a, "\"a\""));
    assertThat(fa.get().payload().asString()).isEqualTo("\"a\"");
    assertThat(r.stats()).isEqualTo(new RequesterStats(2, 2, 0, 0, 0, 0, 0, 0, 0));
  }

  @Test
  void aRequestWithoutAReplyTimesOutNamingItAndItsLateReplyGoesToTheListenerOnly()
      throws Exception {
    RequesterEngine r = running(10);
    Message a = request("o-1");
    CompletableFuture<Reply> fa = r.request(a, Duration.ofSeconds(5));
    time.advance(Duration.ofMillis(4_999));
    assertThat(r.pending().expireDue()).isZero();
    time.advance(Duration.ofMillis(1));
    assertThat(r.pending().expireDue()).isEqualTo(1);

    assertThatThrownBy(fa::get)
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOf(RequestTimeoutException.class)
        .hasMessageContaining(a.id().toString())
        .hasMessageContaining("charge.authorise to payments")
        .hasMessageContaining("PT5S");

    // another caller asks meanwhile; the late reply must not reach it
    CompletableFuture<Reply> fb = r.request(request("o-2"), Duration.ofSeconds(5));
    assertThat(r.replyReceived(replyTo(a, "\"late\""))).isEqualTo(PendingRequests.Match.LATE);
    assertThat(r.replyReceived(replyTo(a, "\"late\""))).isEqualTo(PendingRequests.Match.DUPLICATE);
    assertThat(late).singleElement().satisfies(l -> assertThat(l.requestId()).isEqualTo(a.id()));
    assertThat(fb).isNotDone();
    RequesterStats s = r.stats();
    assertThat(s.timedOut()).isEqualTo(1);
    assertThat(s.lateReplies()).isEqualTo(1);
    assertThat(s.duplicateReplies()).isEqualTo(1);
    assertThat(s.inFlight()).isEqualTo(1);
  }

  @Test
  void aDuplicateReplyIsIgnoredAndAnUnknownOneCountedAndDropped() throws Exception {
    RequesterEngine r = running(10);
    Message a = request("o-1");
    CompletableFuture<Reply> fa = r.request(a, Duration.ofSeconds(5));
    r.replyReceived(replyTo(a, "\"first\""));
    assertThat(r.replyReceived(replyTo(a, "\"second\"")))
        .isEqualTo(PendingRequests.Match.DUPLICATE);
    assertThat(fa.get().payload().asString()).isEqualTo("\"first\"");

    assertThat(r.replyReceived(replyTo(request("stranger"), "{}")))
        .isEqualTo(PendingRequests.Match.UNKNOWN);
    Message noCorrelation = Message.builder("replies", "x").build();
    assertThat(r.replyReceived(noCorrelation)).isEqualTo(PendingRequests.Match.UNKNOWN);
    Message notAUuid = Message.builder("replies", "x").correlationId("order-7").build();
    assertThat(r.replyReceived(notAUuid)).isEqualTo(PendingRequests.Match.UNKNOWN);
    assertThat(r.stats().duplicateReplies()).isEqualTo(1);
    assertThat(r.stats().unknownReplies()).isEqualTo(3);
  }

  @Test
  void inFlightRequestsAreBoundedAndOneMoreIsRefusedWithoutBeingSent() throws Exception {
    RequesterEngine r = running(2);
    Message a = request("o-1");
    r.request(a, Duration.ofSeconds(5));
    r.request(request("o-2"), Duration.ofSeconds(5));
    Message third = request("o-3");
    CompletableFuture<Reply> refused = r.request(third, Duration.ofSeconds(5));
    assertThatThrownBy(refused::get)
        .cause()
        .isInstanceOf(RequesterBusyException.class)
        .hasMessageContaining(third.id().toString())
        .hasMessageContaining("2 requests are in flight");
    assertThat(sent).hasSize(2);

    r.replyReceived(replyTo(a, "{}")); // a slot frees
    assertThat(r.request(third, Duration.ofSeconds(5))).isNotDone();
    assertThat(sent).hasSize(3);
    assertThat(r.stats().refused()).isEqualTo(1);
  }

  @Test
  void aRequestThatCannotBeSentFailsNamingItAndFreesItsSlot() {
    RequesterEngine r = running(1);
    nextSend = CompletableFuture.failedFuture(new IllegalStateException("broker unreachable"));
    Message a = request("o-1");
    CompletableFuture<Reply> fa = r.request(a, Duration.ofSeconds(5));
    assertThatThrownBy(fa::get)
        .cause()
        .isInstanceOf(RequestFailedException.class)
        .hasMessageContaining(a.id().toString())
        .hasMessageContaining("broker unreachable");
    assertThat(r.stats().inFlight()).isZero();
    assertThat(r.stats().failed()).isEqualTo(1);
  }

  @Test
  void closeEndsTheRequestsInFlight() {
    RequesterEngine r = running(10);
    CompletableFuture<Reply> fa = r.request(request("o-1"), Duration.ofSeconds(5));
    r.close();
    assertThatThrownBy(fa::get)
        .cause()
        .isInstanceOf(RequestFailedException.class)
        .hasMessageContaining("closed");
    assertThatThrownBy(() -> r.request(request("o-2"), Duration.ofSeconds(1)))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aRequestsCorrelationIdIsItsId() {
    RequesterEngine r = running(10);
    Message other = Message.builder("payments", "x").correlationId("conversation-1").build();
    assertThatThrownBy(() -> r.request(other, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("correlation id is its message id");
    Message same = Message.builder("payments", "x").build();
    Message withOwnId = same.toBuilder().correlationId(same.id().toString()).build();
    assertThat(r.request(withOwnId, Duration.ofSeconds(1))).isNotDone();
    assertThatThrownBy(() -> r.request(withOwnId, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("already in flight");
  }

  @Test
  void aRetryAfterATimeoutWithTheSameIdGetsTheReply() throws Exception {
    RequesterEngine r = running(10);
    Message a = request("o-1");
    CompletableFuture<Reply> first = r.request(a, Duration.ofSeconds(1));
    time.advance(Duration.ofSeconds(1));
    r.pending().expireDue();
    assertThat(first).isCompletedExceptionally();
    CompletableFuture<Reply> retry = r.request(a, Duration.ofSeconds(1));
    assertThat(r.replyReceived(replyTo(a, "\"ok\""))).isEqualTo(PendingRequests.Match.ANSWERED);
    assertThat(retry.get().payload()).isEqualTo(Payload.json("\"ok\""));
    assertThat(late).isEmpty();
  }

  /** A started requester whose timeout thread never wakes (the tests expire by hand). */
  private RequesterEngine running(int maxInFlight) {
    RequesterEngine r =
        new RequesterEngine(
            "a",
            transport,
            maxInFlight,
            100,
            Duration.ofMillis(10),
            late::add,
            time,
            d -> new java.util.concurrent.CountDownLatch(1).await(), // parks until interrupted
            Runnable::run);
    r.start();
    return r;
  }
}
