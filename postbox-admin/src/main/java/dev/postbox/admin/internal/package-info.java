/** The SQL of the operations API; not API. */
package dev.postbox.admin.internal;
