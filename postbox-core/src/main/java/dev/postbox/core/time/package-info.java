/**
 * Time as Postbox reads it: wall-clock {@link java.time.Clock}, a monotonic {@link
 * dev.postbox.core.time.Ticker} and a {@link dev.postbox.core.time.Sleeper}, each injected, plus
 * {@link dev.postbox.core.time.FakeTime} for tests. The only library package allowed to read the
 * system's clocks or sleep (an ArchUnit rule checks it).
 */
package dev.postbox.core.time;
