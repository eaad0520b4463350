package dev.postbox.console;

/**
 * What a console user may do; each role includes the ones below it. VIEWER reads (payloads masked);
 * OPERATOR also acts on single letters and keys and reveals payloads (audited); ADMIN also replays
 * or discards whole groups.
 */
public enum Role {
  VIEWER,
  OPERATOR,
  ADMIN;

  /** The role hierarchy in Spring Security's notation. */
  static String hierarchy() {
    return "ROLE_ADMIN > ROLE_OPERATOR\nROLE_OPERATOR > ROLE_VIEWER";
  }
}
