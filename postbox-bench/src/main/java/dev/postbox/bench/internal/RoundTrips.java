package dev.postbox.bench.internal;

import java.util.concurrent.CompletableFuture;

/**
 * One transport's two request/reply paths, set up once and used for every run of {@link RrBench}:
 * Postbox's (a requester, and a responder on an {@code EFFECTIVELY_ONCE} subscription) and the
 * broker's bare client echo with the same client settings.
 */
interface RoundTrips extends AutoCloseable {

  /** The transport's name in the figures' names ({@code kafka}, {@code rabbitmq}). */
  String transport();

  /** Sends Postbox request {@code i}; completes with its reply. */
  CompletableFuture<?> request(int i);

  /** Sends bare echo request {@code i}; completes when its echo came back. */
  CompletableFuture<?> echo(int i);

  /** Where the responder's time went since the last call (see {@link ResponderTimings}). */
  String profile();

  /** What the two paths are, for the notes. */
  String settings();
}
