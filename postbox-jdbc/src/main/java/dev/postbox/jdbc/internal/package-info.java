/**
 * Implementation details of {@code dev.postbox.jdbc} (the PostgreSQL stores, row mapping, lanes);
 * not an API, may change at any time.
 */
package dev.postbox.jdbc.internal;
