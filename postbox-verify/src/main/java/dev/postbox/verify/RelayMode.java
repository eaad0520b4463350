package dev.postbox.verify;

/**
 * Which relay the campaign's relay processes run ({@code ./postbox verify --relay}): the default
 * idempotent relay, or the transactional relay (one transactional producer per lane, fenced by the
 * broker when the lane's next owner starts), under which a stale publish is a violation.
 */
enum RelayMode {
  IDEMPOTENT,
  TRANSACTIONAL;

  /** The name on the command line and in the report. */
  String cliName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  static RelayMode parse(String s) {
    for (RelayMode m : values()) {
      if (m.cliName().equals(s)) {
        return m;
      }
    }
    throw new IllegalArgumentException("--relay must be idempotent or transactional, was " + s);
  }
}
