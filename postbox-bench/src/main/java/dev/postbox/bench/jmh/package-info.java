/** JMH micro-benchmarks (codec, envelope mapping), run with {@code ./postbox bench --jmh}. */
package dev.postbox.bench.jmh;
