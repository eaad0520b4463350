package dev.postbox.console;

import dev.postbox.admin.AuditFilter;
import dev.postbox.admin.DeadLetterFilter;
import dev.postbox.admin.PageRequest;
import dev.postbox.admin.PostboxAdmin;
import java.util.Optional;
import java.util.UUID;
import org.springframework.security.core.Authentication;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;

/** The read-only pages: login, dashboard, held keys and rows, trace, audit. */
@Controller
class PagesController {

  private final PostboxAdmin admin;
  private final boolean sso;

  PagesController(PostboxAdmin admin, ConsoleProperties settings) {
    this.admin = admin;
    this.sso = settings.getOidc().enabled();
  }

  @GetMapping("/login")
  String login(Model model) {
    model.addAttribute("sso", sso ? OidcLogin.START : null);
    return "login";
  }

  @GetMapping("/")
  String dashboard(Authentication who, Model model) {
    Masking masking = Masking.of(who);
    model.addAttribute("status", admin.outboxStatus());
    model.addAttribute(
        "groups",
        masking.list(
            admin.groups(DeadLetterFilter.all(), PageRequest.first(10)).items(), masking::group));
    String groups = countGroups();
    model.addAttribute("groupsTotal", groups);
    model.addAttribute(
        "groupsTitle",
        groups.endsWith("+")
            ? "more than "
                + groups.substring(0, groups.length() - 1)
                + " groups: counting stops there"
            : groups + " groups");
    model.addAttribute(
        "parked",
        masking.list(
            admin.parkedKeys(Optional.empty(), PageRequest.first(10)).items(), masking::parked));
    model.addAttribute("blocked", masking.list(admin.blockedOutboxRows(), masking::holding));
    model.addAttribute("lag", admin.lag());
    model.addAttribute("relays", admin.relays());
    return "dashboard";
  }

  /** Pages counted at most for the failure-groups card (past that it shows "10,000+"). */
  static final int MAX_GROUP_PAGES = 10;

  /** Every failure group, counted a page of {@value PageRequest#MAX_LIMIT} at a time. */
  private String countGroups() {
    long n = 0;
    PageRequest page = PageRequest.first(PageRequest.MAX_LIMIT);
    for (int i = 0; i < MAX_GROUP_PAGES; i++) {
      var groups = admin.groups(DeadLetterFilter.all(), page);
      n += groups.items().size();
      if (groups.next().isEmpty()) {
        return Fmt.count(n);
      }
      page = PageRequest.after(groups.next().get(), PageRequest.MAX_LIMIT);
    }
    return Fmt.count(n) + "+";
  }

  @GetMapping("/held")
  String held(
      @RequestParam(required = false) String consumer,
      @RequestParam(required = false) String after,
      Authentication who,
      Model model) {
    Masking masking = Masking.of(who);
    model.addAttribute(
        "parked",
        masking.page(
            admin.parkedKeys(
                Optional.ofNullable(consumer).filter(c -> !c.isBlank()),
                new PageRequest(PageRequest.DEFAULT_LIMIT, Optional.ofNullable(after))),
            masking::parked));
    model.addAttribute("blocked", masking.list(admin.blockedOutboxRows(), masking::holding));
    model.addAttribute(
        "failed",
        masking.list(admin.failedOutboxRows(PageRequest.first(20)).items(), masking::failed));
    model.addAttribute("consumer", consumer);
    return "held";
  }

  /**
   * The trace of a message id, and the dead letters whose business key (the record key) is the text
   * given: one field finds a message by either.
   */
  @GetMapping("/trace")
  String trace(@RequestParam(required = false) String id, Authentication who, Model model) {
    Masking masking = Masking.of(who);
    Optional<String> given = Web.text(id);
    given.ifPresent(key ->
        model.addAttribute(
            "byKey",
            masking.page(
                admin.deadLetters(
                    DeadLetterFilter.builder().key(key).build(), PageRequest.first(20)),
                masking::summary)));
    Optional<UUID> asId = given.flatMap(Web::uuidOrEmpty);
    if (asId.isPresent()) {
      UUID messageId = asId.get();
      model.addAttribute("trace", masking.trace(admin.trace(messageId)));
      model.addAttribute(
          "letters",
          masking.list(
              admin
                  .deadLetters(
                      DeadLetterFilter.builder().messageId(messageId).build(),
                      PageRequest.first(20))
                  .items(),
              masking::summary));
      model.addAttribute(
          "audit",
          admin
              .audit(
                  new AuditFilter(
                      Optional.empty(),
                      Optional.empty(),
                      Optional.empty(),
                      Optional.of(messageId),
                      Optional.empty(),
                      Optional.empty()),
                  PageRequest.first(50))
              .items());
    }
    model.addAttribute("id", id);
    return "trace";
  }

  @GetMapping("/audit")
  String audit(
      @RequestParam(required = false) String actor,
      @RequestParam(required = false) String action,
      @RequestParam(required = false) String after,
      Model model) {
    AuditFilter filter =
        new AuditFilter(
            Web.text(actor),
            Web.text(action),
            Optional.empty(),
            Optional.empty(),
            Optional.empty(),
            Optional.empty());
    model.addAttribute(
        "page", admin.audit(filter, new PageRequest(PageRequest.DEFAULT_LIMIT, Web.text(after))));
    model.addAttribute("actor", actor);
    model.addAttribute("action", action);
    return "audit";
  }
}
