package dev.postbox.core.consumer;

import java.util.List;

/**
 * Applies a batch of messages of one partition, in offset order, in one transaction ({@code
 * EFFECTIVELY_ONCE}: every delivery shares the same connection; duplicates are already removed). If
 * it throws, the batch is rolled back and its messages are handled one at a time (each as a batch
 * of one), so one bad record cannot fail its neighbours.
 */
@FunctionalInterface
public interface BatchHandler {
  void handle(List<Delivery> deliveries) throws Exception;
}
