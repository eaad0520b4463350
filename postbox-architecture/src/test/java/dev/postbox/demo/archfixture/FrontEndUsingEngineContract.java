package dev.postbox.demo.archfixture;

import dev.postbox.core.engine.DeliveryProcessor;

/**
 * Breaks "internal stays in its module": the engine contract is for adapters, not for front ends.
 */
public final class FrontEndUsingEngineContract {
  private FrontEndUsingEngineContract() {}

  public static Object processor(DeliveryProcessor processor) {
    return processor;
  }
}
