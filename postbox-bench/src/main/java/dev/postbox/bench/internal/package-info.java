/** The individual benchmarks, their environment and the peers they measure against; not an API. */
package dev.postbox.bench.internal;
