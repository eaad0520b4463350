/**
 * The side-by-side benchmarks behind {@code ./postbox bench}: targets, runner and report (a front
 * end).
 */
package dev.postbox.bench;
