package dev.postbox.console;

import dev.postbox.admin.PostboxAdmin;
import dev.postbox.admin.ReplayJob;
import dev.postbox.admin.ReplaySelection;
import dev.postbox.jdbc.ReplayRoute;
import jakarta.servlet.http.HttpServletResponse;
import java.util.Optional;
import org.springframework.security.access.prepost.PreAuthorize;
import org.springframework.security.core.Authentication;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.servlet.mvc.support.RedirectAttributes;

/**
 * Starting, pausing, resuming and cancelling replay jobs: POSTs with the CSRF token, by the
 * logged-in user, for ADMIN (who may replay a whole group today), checked on the URL
 * (ConsoleSecurity) and again here. A start refused for its input (no reason, a missing or wrong
 * count) shows the preview again with the problem (400), keeping what was typed.
 */
@Controller
@RequestMapping("/actions/replay-jobs")
@PreAuthorize("hasRole('ADMIN')")
class ReplayJobActions {

  private final PostboxAdmin admin;

  ReplayJobActions(PostboxAdmin admin) {
    this.admin = admin;
  }

  @PostMapping
  String start(
      @ModelAttribute("q") DeadLetterPages.Query q,
      @RequestParam(required = false) Long letter,
      @RequestParam(required = false) String reason,
      @RequestParam(required = false) String confirmation,
      @RequestParam(defaultValue = "false") boolean broadcast,
      Authentication who,
      Model model,
      RedirectAttributes flash,
      HttpServletResponse response) {
    ReplaySelection selection = ReplayJobPages.selection(letter, q);
    ReplayJob job;
    try {
      job =
          admin
              .as(who.getName())
              .startReplayJob(
                  selection,
                  reason,
                  Web.text(confirmation),
                  broadcast ? ReplayRoute.BROADCAST : ReplayRoute.TARGETED);
    } catch (IllegalArgumentException e) {
      response.setStatus(400);
      model.addAttribute("startError", e.getMessage());
      model.addAttribute("typedReason", Optional.ofNullable(reason).orElse(""));
      return ReplayJobPages.show(admin, selection, letter, Masking.of(who), model);
    }
    flash.addFlashAttribute(
        "done", "Replay job " + job.id() + " started: " + job.total() + " letters.");
    return "redirect:/replay-jobs/" + job.id();
  }

  @PostMapping("/{id}/pause")
  String pause(@PathVariable long id, Authentication who, RedirectAttributes flash) {
    admin.as(who.getName()).pauseReplayJob(id);
    flash.addFlashAttribute("done", "Replay job " + id + " paused.");
    return "redirect:/replay-jobs/" + id;
  }

  @PostMapping("/{id}/resume")
  String resume(@PathVariable long id, Authentication who, RedirectAttributes flash) {
    admin.as(who.getName()).resumeReplayJob(id);
    flash.addFlashAttribute("done", "Replay job " + id + " resumed.");
    return "redirect:/replay-jobs/" + id;
  }

  @PostMapping("/{id}/cancel")
  String cancel(@PathVariable long id, Authentication who, RedirectAttributes flash) {
    ReplayJob j = admin.as(who.getName()).cancelReplayJob(id);
    flash.addFlashAttribute(
        "done",
        "Replay job "
            + id
            + " cancelled after "
            + j.processed()
            + " of "
            + j.total()
            + " letters.");
    return "redirect:/replay-jobs/" + id;
  }
}
