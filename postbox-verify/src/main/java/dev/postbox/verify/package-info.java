/**
 * The fault-injection harness and history checker behind {@code ./postbox verify} (a front end).
 */
package dev.postbox.verify;
