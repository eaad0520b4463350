package dev.postbox.console;

import dev.postbox.admin.DeadLetterDetail;
import dev.postbox.admin.DeadLetterFilter;
import dev.postbox.admin.PageRequest;
import dev.postbox.admin.PostboxAdmin;
import dev.postbox.core.spi.DeadLetterStore.Status;
import java.util.NoSuchElementException;
import org.springframework.security.core.Authentication;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestParam;

/**
 * The dead-letter explorer (groups, filters, paging) and one letter's detail, masked by {@link
 * Masking} (the payload is shown only after the audited reveal).
 */
@Controller
class DeadLetterPages {

  private final PostboxAdmin admin;

  DeadLetterPages(PostboxAdmin admin) {
    this.admin = admin;
  }

  /** The explorer's filter fields, as given in the query string. */
  record Query(
      String consumer,
      String topic,
      String type,
      String key,
      String tenant,
      String errorClass,
      String fingerprint,
      String status,
      String messageId) {

    DeadLetterFilter filter() {
      return DeadLetterFilter.builder()
          .consumer(consumer)
          .topic(topic)
          .type(type)
          .key(key)
          .tenant(tenant)
          .errorClass(errorClass)
          .fingerprint(fingerprint)
          .status(Web.text(status).map(Status::valueOf).orElse(null))
          .messageId(Web.text(messageId).map(Web::uuid).orElse(null))
          .build();
    }
  }

  @GetMapping("/dead-letters")
  String list(
      @ModelAttribute("q") Query q,
      @RequestParam(required = false) String after,
      @RequestParam(required = false) String groupsAfter,
      Authentication who,
      Model model) {
    DeadLetterFilter filter = q.filter();
    Masking masking = Masking.of(who);
    model.addAttribute(
        "groups",
        masking.page(
            admin.groups(filter, new PageRequest(20, Web.text(groupsAfter))), masking::group));
    model.addAttribute(
        "letters",
        masking.page(
            admin.deadLetters(filter, new PageRequest(PageRequest.DEFAULT_LIMIT, Web.text(after))),
            masking::summary));
    return "dead-letters";
  }

  @GetMapping("/dead-letters/{id}")
  String detail(@PathVariable long id, Authentication who, Model model) {
    return show(admin, id, Masking.of(who), false, model);
  }

  /**
   * One letter's page; {@code revealed} (only after the audited reveal, by a holder of the reveal
   * permission) shows the payload.
   */
  static String show(PostboxAdmin admin, long id, Masking masking, boolean revealed, Model model) {
    DeadLetterDetail original =
        admin.deadLetter(id).orElseThrow(() -> new NoSuchElementException("no dead letter " + id));
    boolean shown = revealed && masking.reveals();
    DeadLetterDetail d = masking.detail(original);
    model.addAttribute("d", d);
    model.addAttribute("s", d.summary());
    model.addAttribute("revealed", shown);
    model.addAttribute("payloadSize", original.payload().length);
    model.addAttribute(
        "payloadMasked", Masking.payload(original.payload().length, original.contentType()));
    model.addAttribute(
        "payload",
        shown
            ? original
                .payloadText()
                .orElseGet(() -> java.util.Base64.getEncoder().encodeToString(original.payload()))
            : "");
    model.addAttribute("payloadBase64", shown && original.payloadText().isEmpty());
    model.addAttribute("trace", d.trace().orElse(null));
    model.addAttribute("hasTrace", d.trace().isPresent());
    model.addAttribute("contentType", d.contentType().orElse(""));
    model.addAttribute("pending", d.summary().status() == Status.PENDING);
    model.addAttribute("messageId", d.summary().messageId().map(String::valueOf).orElse(""));
    return "dead-letter";
  }
}
