/**
 * PostgreSQL adapter: the outbox writer, the relay store, inbox, parking and dead-letter stores,
 * migrations, replay and operations probes.
 */
package dev.postbox.jdbc;
