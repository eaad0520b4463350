/**
 * The engines behind the public API (relay loop, delivery processing, key lanes, offset tracking);
 * not an API, may change at any time.
 */
package dev.postbox.core.internal;
