package dev.postbox.core.engine;

/** What the engine's tests share. */
final class EngineTesting {

  /** A transport that is none of the real ones: core's tests name no transport. */
  static final TransportBinding TRANSPORT =
      new TransportBinding("test-bus", "messaging.test-bus.offset", t -> false);

  private EngineTesting() {}
}
