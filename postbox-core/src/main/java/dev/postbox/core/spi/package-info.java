/**
 * What stores and transports implement (relay store and publisher, inbox, parking, dead-letter and
 * idempotency stores); for implementers, not for applications.
 */
package dev.postbox.core.spi;
