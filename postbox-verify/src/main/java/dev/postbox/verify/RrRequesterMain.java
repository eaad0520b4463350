package dev.postbox.verify;

import dev.postbox.core.Message;
import dev.postbox.core.reply.Reply;
import dev.postbox.core.reply.RequestTimeoutException;
import dev.postbox.core.reply.Requester;
import dev.postbox.kafka.KafkaRequester;
import dev.postbox.rabbitmq.RabbitRequester;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Semaphore;

/**
 * The requester of the request-reply scenario ({@link RequestReplyScenario}), as its own OS
 * process: sends {@code total} requests, {@value #WINDOW} at a time, and writes what became of each
 * to its journal (appended, one line each, before a request is sent and when it ends): {@code SEND
 * <id> <seq>}, then {@code REPLY <id> <payload>}, {@code TIMEOUT <id> <message>} or {@code FAILED
 * <id> <message>}. A new incarnation (after a crash) first sends again, with the same id and
 * payload, every request the journal shows sent without an end (as a caller retrying would), then
 * goes on with new ones. When every request has ended it writes {@code DONE} and waits to be
 * stopped.
 *
 * <p>Arguments: bootstrap servers, request topic, reply topic, journal file, total, timeout ms. On
 * RabbitMQ the first is the AMQP URI ({@code amqp://...}) and the reply topic is unused: the
 * requester replies come to its own exclusive queue (a new one for each incarnation).
 */
public final class RrRequesterMain {

  static final int WINDOW = 8;

  private RrRequesterMain() {}

  public static void main(String[] args) throws Exception {
    String topic = args[1];
    Path journalFile = Path.of(args[3]);
    int total = Integer.parseInt(args[4]);
    Duration timeout = Duration.ofMillis(Long.parseLong(args[5]));
    Map<UUID, Integer> open = new LinkedHashMap<>(); // sent, not ended: id -> seq
    int issued = 0;
    if (Files.exists(journalFile)) {
      for (String line : Files.readAllLines(journalFile, StandardCharsets.UTF_8)) {
        String[] p = line.split(" ", 3);
        if (p[0].equals("SEND")) {
          open.put(UUID.fromString(p[1]), Integer.parseInt(p[2]));
          issued = Math.max(issued, Integer.parseInt(p[2]) + 1);
        } else if (p.length > 1 && !p[0].equals("DONE")) {
          open.remove(UUID.fromString(p[1]));
        }
      }
    }
    try (OutputStream journal = new FileOutputStream(journalFile.toFile(), true);
        Requester requester = requester(args[0], args[2])) {
      System.out.println("requester started, " + open.size() + " to send again");
      Semaphore window = new Semaphore(WINDOW);
      Map<UUID, Integer> retry = new LinkedHashMap<>(open);
      for (Map.Entry<UUID, Integer> e : retry.entrySet()) {
        send(requester, journal, window, topic, e.getKey(), e.getValue(), timeout);
      }
      for (int seq = issued; seq < total; seq++) {
        send(requester, journal, window, topic, UUID.randomUUID(), seq, timeout);
      }
      window.acquire(WINDOW); // every request ended
      write(journal, "DONE");
      System.out.println("requester done");
    }
    Thread.sleep(Long.MAX_VALUE); // until stopped
  }

  private static Requester requester(String broker, String replyTopic) {
    if (broker.startsWith("amqp")) {
      return RabbitRequester.builder(broker).name("rr-requester").build().start();
    }
    return KafkaRequester.builder(broker, replyTopic).name("rr-requester").build().start();
  }

  private static void send(
      Requester requester,
      OutputStream journal,
      Semaphore window,
      String topic,
      UUID id,
      int seq,
      Duration timeout)
      throws Exception {
    window.acquire();
    Message m =
        Message.builder(topic, "rr.request")
            .id(id)
            .key("k" + (seq % 50))
            .jsonPayload("{\"seq\":" + seq + "}")
            .build();
    write(journal, "SEND " + id + " " + seq);
    CompletableFuture<Reply> f;
    try {
      f = requester.request(m, timeout);
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    }
    f.whenComplete((reply, error) -> {
      try {
        if (reply != null) {
          write(journal, "REPLY " + id + " " + reply.payload().asString());
        } else {
          Throwable t = error instanceof CompletionException c ? c.getCause() : error;
          String kind = t instanceof RequestTimeoutException ? "TIMEOUT " : "FAILED ";
          write(journal, kind + id + " " + String.valueOf(t.getMessage()).replace('\n', ' '));
        }
      } catch (IOException e) {
        System.out.println("journal write failed: " + e);
      } finally {
        window.release();
      }
    });
  }

  /** One line, written through to the OS at once (a halt loses nothing written). */
  private static void write(OutputStream journal, String line) throws IOException {
    synchronized (journal) {
      journal.write((line + "\n").getBytes(StandardCharsets.UTF_8));
      journal.flush();
    }
  }
}
