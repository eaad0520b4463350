package dev.postbox.console;

import dev.postbox.admin.DeadLetterFilter;
import dev.postbox.admin.OperatorActions;
import dev.postbox.admin.PostboxAdmin;
import dev.postbox.jdbc.ReplayResult;
import dev.postbox.jdbc.ReplayRoute;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.UUID;
import org.springframework.security.access.prepost.PreAuthorize;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.servlet.mvc.support.RedirectAttributes;

/**
 * The operator actions, each a POST with the CSRF token, done by {@link PostboxAdmin#as} the
 * logged-in user (so the audit row names them). Roles are checked on the URL (ConsoleSecurity) and
 * again here.
 */
@Controller
@RequestMapping("/actions")
@PreAuthorize("hasRole('OPERATOR')")
class ActionsController {

  private final PostboxAdmin admin;

  ActionsController(PostboxAdmin admin) {
    this.admin = admin;
  }

  private OperatorActions as(Principal who) {
    return admin.as(who.getName());
  }

  @PostMapping("/dead-letters/{id}/reveal")
  @PreAuthorize("hasAuthority('" + Masking.REVEAL + "')")
  String reveal(
      @PathVariable long id, org.springframework.security.core.Authentication who, Model model) {
    as(who).revealPayload(id);
    return DeadLetterPages.show(admin, id, Masking.of(who), true, model);
  }

  /**
   * Replays one letter to its consumer only, or, with {@code broadcast=true} (a box the operator
   * ticks), to every consumer of its topic.
   */
  @PostMapping("/dead-letters/{id}/replay")
  String replay(
      @PathVariable long id,
      @RequestParam(defaultValue = "false") boolean broadcast,
      Principal who,
      RedirectAttributes flash) {
    ReplayRoute route = broadcast ? ReplayRoute.BROADCAST : ReplayRoute.TARGETED;
    flash.addFlashAttribute(
        "done",
        (broadcast ? "Broadcast replay" : "Replay")
            + " of dead letter "
            + id
            + ": "
            + describe(as(who).replay(id, route)));
    return "redirect:/dead-letters/" + id;
  }

  /**
   * Writes the corrected copy; a payload that is not valid for its content type (the one given, or
   * the letter's) is refused with 400 and the page again, the form keeping what was typed.
   */
  @PostMapping("/dead-letters/{id}/edit")
  String edit(
      @PathVariable long id,
      @RequestParam String payload,
      @RequestParam(required = false) String contentType,
      @RequestParam String reason,
      org.springframework.security.core.Authentication who,
      RedirectAttributes flash,
      Model model,
      jakarta.servlet.http.HttpServletResponse response) {
    java.util.Optional<String> type =
        Web.text(contentType).or(() -> admin.deadLetter(id).flatMap(d -> d.contentType()));
    java.util.Optional<String> invalid = BodyCheck.problem(payload, type);
    if (invalid.isPresent()) {
      response.setStatus(400);
      DeadLetterPages.show(admin, id, Masking.of(who), false, model);
      model.addAttribute("editError", invalid.get());
      model.addAttribute("editPayload", payload);
      model.addAttribute("editContentType", contentType == null ? "" : contentType);
      model.addAttribute("editReason", reason);
      return "dead-letter";
    }
    UUID copy =
        as(who)
            .edit(
                id,
                payload.getBytes(StandardCharsets.UTF_8),
                Web.text(contentType),
                Web.reason(reason));
    flash.addFlashAttribute(
        "done",
        "Corrected copy " + copy + " written to the outbox; dead letter " + id + " replaced.");
    flash.addFlashAttribute("copy", copy.toString());
    return "redirect:/dead-letters/" + id;
  }

  @PostMapping("/dead-letters/{id}/discard")
  String discard(
      @PathVariable long id, @RequestParam String reason, Principal who, RedirectAttributes flash) {
    as(who).discard(id, Web.reason(reason));
    flash.addFlashAttribute("done", "Dead letter " + id + " discarded.");
    return "redirect:/dead-letters/" + id;
  }

  @PostMapping("/group/replay")
  @PreAuthorize("hasRole('ADMIN')")
  String replayGroup(@RequestParam String fingerprint, Principal who, RedirectAttributes flash) {
    ReplayResult r = as(who).replayAll(DeadLetterFilter.builder().fingerprint(fingerprint).build());
    flash.addFlashAttribute("done", "Group replay: " + describe(r));
    return "redirect:/dead-letters?fingerprint=" + Web.urlEncode(fingerprint);
  }

  @PostMapping("/group/discard")
  @PreAuthorize("hasRole('ADMIN')")
  String discardGroup(
      @RequestParam String fingerprint,
      @RequestParam String reason,
      Principal who,
      RedirectAttributes flash) {
    int n =
        as(who)
            .discardAll(
                DeadLetterFilter.builder().fingerprint(fingerprint).build(), Web.reason(reason));
    flash.addFlashAttribute("done", "Group discard: " + n + " dead letters discarded.");
    return "redirect:/dead-letters?fingerprint=" + Web.urlEncode(fingerprint);
  }

  @PostMapping("/parked/release")
  String release(
      @RequestParam String consumer,
      @RequestParam String key,
      Principal who,
      RedirectAttributes flash) {
    int n = as(who).releaseParked(consumer, key);
    flash.addFlashAttribute(
        "done", "Key " + key + " of " + consumer + " released (" + n + " messages).");
    return "redirect:/held";
  }

  @PostMapping("/parked/skip")
  String skip(
      @RequestParam String consumer,
      @RequestParam String key,
      @RequestParam String reason,
      Principal who,
      RedirectAttributes flash) {
    long letter = as(who).skipParked(consumer, key, Web.reason(reason));
    flash.addFlashAttribute(
        "done", "Head of key " + key + " skipped (kept as dead letter " + letter + ").");
    return "redirect:/held";
  }

  @PostMapping("/blocked/{position}/retry")
  String retryBlocked(@PathVariable long position, Principal who, RedirectAttributes flash) {
    boolean done = as(who).retryBlocked(position);
    flash.addFlashAttribute(
        "done",
        done
            ? "Outbox row " + position + " will be retried."
            : "Outbox row " + position + " holds nothing any more.");
    return "redirect:/held";
  }

  @PostMapping("/blocked/{position}/skip")
  String skipBlocked(
      @PathVariable long position,
      @RequestParam String reason,
      Principal who,
      RedirectAttributes flash) {
    boolean done = as(who).skipBlocked(position, Web.reason(reason));
    flash.addFlashAttribute(
        "done",
        done
            ? "Outbox row " + position + " skipped."
            : "Outbox row " + position + " holds nothing any more.");
    return "redirect:/held";
  }

  private static String describe(ReplayResult r) {
    return r.replayed().size()
        + " replayed, "
        + r.skipped().size()
        + " skipped, "
        + r.failed().size()
        + " failed";
  }
}
