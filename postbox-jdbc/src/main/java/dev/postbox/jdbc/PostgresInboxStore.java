package dev.postbox.jdbc;

import dev.postbox.core.spi.InboxStore;
import dev.postbox.jdbc.internal.PostgresInboxStoreImpl;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The {@link InboxStore} of an effectively-once consumer on PostgreSQL: dedupe records in {@code
 * postbox_inbox}, entity versions in {@code postbox_entity_version} (both created by {@link
 * PostboxMigrations} version 2).
 *
 * <pre>{@code
 * InboxStore inbox = PostgresInboxStore.create(dataSource);
 * boolean applied = inbox.processOnce("billing", message.id(), connection -> {
 *   if (inbox.advanceVersion(connection, "order:" + orderId, event.version())) {
 *     updateOrder(connection, event);   // same transaction as the dedupe record
 *   }
 * });
 * }</pre>
 *
 * <p><b>Transactions.</b> (With {@link #create(DataSource, TransactionRunner)}, the runner supplies
 * the connection, begins and commits; the rest holds as below.) {@code processOnce} and {@code
 * processBatch} take a connection from the data source, switch off auto-commit, insert the dedupe
 * record(s) first, run the work on that connection, commit, then restore auto-commit and close the
 * connection. The work may write to the {@link Outbox} on the connection (the outgoing messages
 * then commit with the effect). An exception thrown by the work rolls everything back and
 * propagates unchanged; failures of the inbox's own statements, including the commit, throw {@link
 * InboxException}. The work must not commit, roll back or change auto-commit itself (if it ended
 * the transaction, the inbox notices and throws {@link IllegalStateException}). If a statement of
 * the work failed and the work caught the exception, PostgreSQL has aborted the transaction and
 * would silently roll back the commit: the inbox rolls back and throws {@link InboxException}
 * instead of reporting the message as processed. If the commit fails in a way that leaves its
 * outcome unknown (the connection broke), redelivering the message is still safe: if the commit did
 * happen, the dedupe record makes the redelivery a duplicate.
 *
 * <p><b>Concurrency.</b> Under {@code READ COMMITTED} (PostgreSQL's default), a delivery of an id
 * that another transaction is still processing waits for that transaction, holding its connection:
 * it then returns {@code false} if the other committed, or applies the message if the other rolled
 * back. Under {@code REPEATABLE READ} or {@code SERIALIZABLE} the waiting delivery fails instead
 * with a serialization failure (an {@link InboxException}); a retry then sees the duplicate. A
 * batch claims its ids in a fixed (sorted) order, so two batches with overlapping ids do not
 * deadlock. {@link InboxStore#advanceVersion} locks the entity's row until the caller's transaction
 * ends, so concurrent advances of one entity are serialised and only a newer version wins; it
 * refuses a connection in auto-commit mode ({@link TransactionRequiredException}), since the
 * version must commit with the effect it guards.
 *
 * <p><b>Stored results.</b> {@link InboxStore#processOnceWithResult} stores the result the work
 * returns on the message's row ({@code result}, {@code result_content_type}; migration version 10)
 * in the same transaction; a later delivery of the id is a duplicate that gets this result back
 * without running the work (a repeated request returns the first answer).
 *
 * <p><b>Purging.</b> Dedupe records are kept until purged; use {@link InboxRetention} to purge a
 * consumer's old records safely.
 *
 * <p>No options (so no defaults). Thread-safe.
 */
public final class PostgresInboxStore {

  private PostgresInboxStore() {}

  /**
   * An inbox store on {@code dataSource}; checks that the inbox tables exist in the data source's
   * current schema.
   *
   * @throws InboxException if they do not (run {@link PostboxMigrations#migrate} first) or the
   *     database cannot be reached
   */
  public static InboxStore create(DataSource dataSource) {
    return new PostgresInboxStoreImpl(
        Objects.requireNonNull(dataSource, "dataSource"), Optional.empty());
  }

  /**
   * An inbox store on {@code dataSource} whose transactions {@code transactions} runs (an
   * application framework's transaction manager, so that the handler's other writes commit with the
   * dedupe record); its connections must be {@code dataSource}'s. Before a commit the inbox still
   * refuses a transaction the work left aborted or ended, as with its own transactions.
   *
   * @throws InboxException if the inbox tables do not exist or the database cannot be reached
   */
  public static InboxStore create(DataSource dataSource, TransactionRunner transactions) {
    return new PostgresInboxStoreImpl(
        Objects.requireNonNull(dataSource, "dataSource"),
        Optional.of(Objects.requireNonNull(transactions, "transactions")));
  }
}
