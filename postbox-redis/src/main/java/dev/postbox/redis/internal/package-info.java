/** Implementation of the Redis idempotency store; not an API. */
package dev.postbox.redis.internal;
