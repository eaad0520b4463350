package dev.postbox.core.internal;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** The one place core computes SHA-256 (failure fingerprints, payload fingerprints). */
public final class Hashes {

  private Hashes() {}

  /** The SHA-256 digest of {@code bytes} (32 bytes). */
  public static byte[] sha256(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
