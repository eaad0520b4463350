/**
 * Small helpers core's own packages share (hashing); not API, and not used outside core (an
 * ArchUnit rule checks it).
 */
package dev.postbox.core.internal;
