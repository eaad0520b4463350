package dev.postbox.jdbc;

/**
 * Work done in one transaction by {@link Outbox#inTransaction}. May throw anything: the transaction
 * then rolls back and the exception propagates (checked exceptions wrapped in {@link
 * OutboxException}).
 */
@FunctionalInterface
public interface TransactionWork<T> {
  T execute(OutboxTransaction tx) throws Exception;
}
