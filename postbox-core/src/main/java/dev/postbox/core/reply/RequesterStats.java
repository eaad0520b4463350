package dev.postbox.core.reply;

/**
 * A requester's counters since it started.
 *
 * @param sent requests sent (accepted by the broker)
 * @param replied requests answered in time (their futures completed with the reply)
 * @param timedOut requests that ended with a {@link RequestTimeoutException}
 * @param failed requests that could not be sent, or were in flight at close
 * @param refused requests refused for back-pressure ({@link RequesterBusyException})
 * @param lateReplies replies that arrived after their request timed out (first one per request)
 * @param duplicateReplies further replies to a request already answered (or already late), ignored
 * @param unknownReplies replies whose correlation id matches no request this requester remembers,
 *     or that carry none, dropped
 * @param inFlight requests waiting for their reply now
 */
public record RequesterStats(
    long sent,
    long replied,
    long timedOut,
    long failed,
    long refused,
    long lateReplies,
    long duplicateReplies,
    long unknownReplies,
    int inFlight) {}
