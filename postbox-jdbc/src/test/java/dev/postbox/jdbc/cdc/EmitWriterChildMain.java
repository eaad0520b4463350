package dev.postbox.jdbc.cdc;

import dev.postbox.core.Message;
import java.sql.PreparedStatement;
import java.util.UUID;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A writer in its own JVM, so a test can halt it at a crash point: one order row and one message
 * through {@link EmitMessageOutbox#inTransaction}. Args: jdbcUrl, customer, message id.
 */
public final class EmitWriterChildMain {
  public static void main(String[] args) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setURL(args[0]);
    Message m =
        Message.builder("orders", "order.created")
            .id(UUID.fromString(args[2]))
            .key(args[1])
            .jsonPayload("{}")
            .build();
    EmitMessageOutbox.create()
        .inTransaction(
            ds,
            tx -> {
              try (PreparedStatement ps =
                  tx.connection().prepareStatement("INSERT INTO emit_order VALUES (?)")) {
                ps.setString(1, args[1]);
                ps.executeUpdate();
              }
              tx.write(m);
              return null;
            });
    System.out.println("committed");
  }
}
