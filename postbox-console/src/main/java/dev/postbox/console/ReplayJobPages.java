package dev.postbox.console;

import dev.postbox.admin.PageRequest;
import dev.postbox.admin.PostboxAdmin;
import dev.postbox.admin.ReplayJob;
import dev.postbox.admin.ReplayPreview;
import dev.postbox.admin.ReplaySelection;
import java.util.NoSuchElementException;
import org.springframework.security.core.Authentication;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestParam;

/**
 * The replay jobs: the preview of a selection (one letter, a group, or the explorer's filters) with
 * the form that starts a job (reason, and the typed count above the threshold), one job's progress
 * (refreshing itself while it runs) and the list of jobs. Starting, pausing, resuming and
 * cancelling are {@link ReplayJobActions}.
 */
@Controller
class ReplayJobPages {

  private final PostboxAdmin admin;

  ReplayJobPages(PostboxAdmin admin) {
    this.admin = admin;
  }

  /** The selection: {@code letter} (one dead letter) or the explorer's filter fields. */
  static ReplaySelection selection(Long letter, DeadLetterPages.Query q) {
    return letter != null ? ReplaySelection.letter(letter) : ReplaySelection.matching(q.filter());
  }

  @GetMapping("/replay-jobs/preview")
  String preview(
      @ModelAttribute("q") DeadLetterPages.Query q,
      @RequestParam(required = false) Long letter,
      Authentication who,
      Model model) {
    return show(admin, selection(letter, q), letter, Masking.of(who), model);
  }

  /** The preview page of {@code selection}, with the start form. */
  static String show(
      PostboxAdmin admin, ReplaySelection selection, Long letter, Masking masking, Model model) {
    ReplayPreview p = admin.previewReplay(selection);
    model.addAttribute("p", p);
    model.addAttribute("sample", p.sample().stream().map(masking::summary).toList());
    model.addAttribute("letter", letter);
    return "replay-preview";
  }

  @GetMapping("/replay-jobs")
  String list(@RequestParam(required = false) String after, Model model) {
    model.addAttribute("jobs", admin.replayJobs(new PageRequest(20, Web.text(after))));
    return "replay-jobs";
  }

  @GetMapping("/replay-jobs/{id}")
  String job(@PathVariable long id, Model model) {
    ReplayJob j =
        admin.replayJob(id).orElseThrow(() -> new NoSuchElementException("no replay job " + id));
    model.addAttribute("j", j);
    model.addAttribute(
        "rate", j.ratePerSecond().map(r -> String.format("%.1f letters/s", r)).orElse("-"));
    return "replay-job";
  }
}
