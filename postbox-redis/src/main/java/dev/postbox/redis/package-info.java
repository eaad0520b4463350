/**
 * The Redis idempotency store: dedupe with processing leases, stored results and TTLs for consumers
 * whose effect is outside a database transaction.
 */
package dev.postbox.redis;
