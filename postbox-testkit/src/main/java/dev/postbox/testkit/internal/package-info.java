/**
 * Implementation of the test kit: not API, may change without notice. Use the types in {@link
 * dev.postbox.testkit}.
 */
package dev.postbox.testkit.internal;
