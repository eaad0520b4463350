/**
 * The CDC relay: publishes outbox rows as PostgreSQL's logical replication streams their inserts
 * (built-in {@code pgoutput} plugin, one slot, one publication), instead of polling the table. See
 * {@link dev.postbox.jdbc.cdc.CdcRelay} and docs/relay.md, "CDC relay".
 */
package dev.postbox.jdbc.cdc;
