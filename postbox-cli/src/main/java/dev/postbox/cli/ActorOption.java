package dev.postbox.cli;

import picocli.CommandLine.Option;

/** Who acts, recorded on every change and in the audit. */
final class ActorOption {

  @Option(
      names = "--actor",
      defaultValue = "${env:POSTBOX_ACTOR:-${sys:user.name}}",
      description = "Who acts, for the audit (default: $POSTBOX_ACTOR, else the OS user).")
  String actor;
}
