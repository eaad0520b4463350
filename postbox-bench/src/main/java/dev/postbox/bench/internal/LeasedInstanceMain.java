package dev.postbox.bench.internal;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.time.Sleeper;
import dev.postbox.jdbc.PostgresShardLeaseStore;

/**
 * A {@link LeasedInstance} as its own OS process, for the hand-over after an instance is killed
 * ({@link RabbitHandover}): it runs until its standard input closes (the parent ended) or it is
 * killed. Arguments: AMQP URI, JDBC URL (with the schema of the leases), user, password (may be
 * empty), subscription, topic, shards.
 */
public final class LeasedInstanceMain {

  private LeasedInstanceMain() {}

  public static void main(String[] args) throws Exception {
    HikariDataSource ds = new HikariDataSource();
    ds.setJdbcUrl(args[1]);
    ds.setUsername(args[2]);
    if (!args[3].isEmpty()) {
      ds.setPassword(args[3]);
    }
    ds.setMaximumPoolSize(2);
    LeasedInstance instance =
        new LeasedInstance(
            args[0],
            args[4],
            args[5],
            Integer.parseInt(args[6]),
            PostgresShardLeaseStore.create(ds),
            LeasedInstance.LEASE_TTL,
            LeasedInstance.GO,
            Sleeper.SYSTEM);
    instance.start();
    System.out.println("started");
    System.out.flush();
    while (System.in.read() >= 0) {
      // the parent holds the pipe open while it wants this instance
    }
    instance.close();
    ds.close();
  }
}
