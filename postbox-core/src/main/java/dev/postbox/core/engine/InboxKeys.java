package dev.postbox.core.engine;

import dev.postbox.core.Message;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

/**
 * The id under which the inbox ({@code EFFECTIVELY_ONCE}) and the idempotency store ({@code
 * DEDUPLICATED}) record a message: its id bound to its tenant. A message without a tenant is
 * recorded under its own id; one with a tenant under a name-based UUID of the tenant and the id, so
 * that a message id sent by (or forged in the name of) tenant A can never suppress tenant B's
 * message with the same id. Stateless.
 *
 * <p>Upgrade note: a message with a tenant applied before this binding existed was recorded under
 * its plain id; redelivered after the upgrade (its offset was not committed yet) it is applied
 * again. Let consumers commit (stop them cleanly) before upgrading.
 */
public final class InboxKeys {

  private InboxKeys() {}

  /** The inbox id of {@code message}: {@link #of(UUID, String)} of its id and tenant, if any. */
  public static UUID of(Message message) {
    return message.tenant().map(t -> of(message.id(), t)).orElse(message.id());
  }

  /** The inbox id of message {@code id} of {@code tenant} (for look-ups such as a trace). */
  public static UUID of(UUID id, String tenant) {
    // length-prefixed, so that no tenant text can collide with another tenant-and-id pair
    return UUID.nameUUIDFromBytes(
        ("postbox-inbox\n" + tenant.length() + ":" + tenant + "\n" + id)
            .getBytes(StandardCharsets.UTF_8));
  }
}
