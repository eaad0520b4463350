package dev.postbox.bench.internal;

import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.storage.OffsetBackingStore;
import org.apache.kafka.connect.util.Callback;

/**
 * Debezium's offsets in memory, for the CDC baseline. Kafka Connect's own {@code
 * MemoryOffsetBackingStore} (connect-runtime 4.3, which Debezium 3.6 brings) calls a class that
 * kafka-clients 4.4 (the project's version) moved, so the benchmark supplies this minimal store.
 * Thread-safe.
 */
public final class InMemoryOffsetStore implements OffsetBackingStore {

  private final Map<ByteBuffer, ByteBuffer> data = new ConcurrentHashMap<>();

  /** For Kafka Connect, which instantiates it by class name. */
  public InMemoryOffsetStore() {}

  @Override
  public void start() {}

  @Override
  public void stop() {}

  @Override
  public Future<Map<ByteBuffer, ByteBuffer>> get(Collection<ByteBuffer> keys) {
    Map<ByteBuffer, ByteBuffer> out = new HashMap<>();
    for (ByteBuffer k : keys) {
      ByteBuffer v = data.get(k);
      if (v != null) {
        out.put(k, v);
      }
    }
    return CompletableFuture.completedFuture(out);
  }

  @Override
  public Future<Void> set(Map<ByteBuffer, ByteBuffer> values, Callback<Void> callback) {
    values.forEach((k, v) -> {
      if (v == null) {
        data.remove(k);
      } else {
        data.put(k, v);
      }
    });
    if (callback != null) {
      callback.onCompletion(null, null);
    }
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public Set<Map<String, Object>> connectorPartitions(String connectorName) {
    return Set.of();
  }

  @Override
  public void configure(WorkerConfig config) {}
}
