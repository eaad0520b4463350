package dev.postbox.verify;

/**
 * Which relay the campaign's relay processes run ({@code ./postbox verify --relay}): the default
 * idempotent relay, the transactional relay (one transactional producer per lane, fenced by the
 * broker when the lane's next owner starts), under which a stale publish is a violation, or the CDC
 * relay ({@link dev.postbox.jdbc.cdc.CdcRelay}: one process streams the slot, the other stands by),
 * which runs its own scenarios ({@link Scenario#all(RelayMode)}).
 */
enum RelayMode {
  IDEMPOTENT,
  TRANSACTIONAL,
  CDC;

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
    throw new IllegalArgumentException(
        "--relay must be idempotent, transactional or cdc, was " + s);
  }
}
