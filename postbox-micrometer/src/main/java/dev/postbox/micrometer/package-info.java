/** Reports Postbox metrics to a Micrometer MeterRegistry (optional integration). */
package dev.postbox.micrometer;
