package dev.postbox.console;

/**
 * What a console user may do; each role includes the ones below it. VIEWER reads (masked, see
 * {@link Masking}); OPERATOR also acts on single letters and keys; ADMIN also replays or discards
 * whole groups. Seeing unmasked data is the separate {@link Masking#REVEAL} permission (ADMIN's by
 * default, {@code postbox.console.reveal-roles}).
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
