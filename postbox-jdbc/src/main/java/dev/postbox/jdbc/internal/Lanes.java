package dev.postbox.jdbc.internal;

import dev.postbox.core.Message;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * The lane function: which relay lane a message belongs to. Must never change for a given key, or
 * rows of one key could sit in two lanes owned by two relays; CRC32C is specified, stable and fast.
 */
public final class Lanes {

  /** Number of lanes; fixed by the schema (postbox_relay_lane holds 0..63). */
  public static final int COUNT = 64;

  /** Namespace (first key) of Postbox's advisory locks: "PBOX". */
  public static final int LOCK_NAMESPACE = 0x50424f58;

  private Lanes() {}

  /** 32-bit hash of a key, also the second key of its advisory lock. */
  public static int keyHash(String key) {
    CRC32C crc = new CRC32C();
    crc.update(key.getBytes(StandardCharsets.UTF_8));
    return (int) crc.getValue();
  }

  /** The lane of a message: by key, or by id for messages without a key (spreads them evenly). */
  public static int laneOf(Message message) {
    int hash = message.key().map(Lanes::keyHash).orElseGet(() -> message.id().hashCode());
    return Math.floorMod(hash, COUNT);
  }
}
