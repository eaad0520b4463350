package dev.postbox.kafka;

import dev.postbox.core.PostboxException;

/**
 * An {@code EFFECTIVELY_ONCE} subscription would purge dedupe records while its topic can still
 * deliver their messages (inbox retention shorter than the topic's {@code retention.ms}), so a
 * redelivered message could be applied twice. Raise the inbox retention or, if old messages can
 * never come again, force it.
 */
public class InboxRetentionTooShortException extends PostboxException {
  public InboxRetentionTooShortException(String message) {
    super(message);
  }
}
