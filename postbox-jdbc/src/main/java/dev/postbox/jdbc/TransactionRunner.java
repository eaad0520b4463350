package dev.postbox.jdbc;

import java.sql.Connection;

/**
 * Where the inbox's transaction of one message (or one batch) runs: who supplies the connection,
 * begins, commits and rolls back. {@link PostgresInboxStore#create(javax.sql.DataSource)} uses its
 * own (a connection of the data source, committed by the inbox); an application framework supplies
 * one that runs the transaction through its transaction manager, so that everything the handler
 * writes through that framework (Spring: {@code JdbcTemplate}, JPA repositories, {@code
 * Transactional} services) commits or rolls back with the dedupe record, on one connection. The
 * Spring Boot starter's runner is its {@code PlatformTransactionManager}'s.
 *
 * <p>A runner must begin a new transaction (never join one the calling thread already has), hand
 * the body the transaction's connection, then roll back if the body threw (rethrowing its exception
 * unchanged) or asked not to commit, and commit otherwise. Implementations must be thread-safe.
 */
public interface TransactionRunner {

  /**
   * Runs {@code body} in one new transaction and returns its value.
   *
   * @param what the transaction, for messages ("message 42 of consumer 'billing'")
   * @throws Exception what the body threw (after the rollback); a failure of the begin or the
   *     commit as {@link InboxException} (a commit whose outcome is unknown may have happened: a
   *     redelivery is then a duplicate)
   */
  <T> T inTransaction(String what, Body<T> body) throws Exception;

  /** The work in the transaction, on its connection; decides whether to commit. */
  @FunctionalInterface
  interface Body<T> {
    /**
     * The work on the transaction's {@code connection}, which it must not commit, roll back or
     * close.
     */
    Step<T> run(Connection connection) throws Exception;
  }

  /**
   * What the body decided.
   *
   * @param value the result of the transaction
   * @param commit commit ({@code true}) or roll back ({@code false}: nothing of it is kept)
   */
  record Step<T>(T value, boolean commit) {}
}
