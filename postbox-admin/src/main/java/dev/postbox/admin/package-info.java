/**
 * The operations API over the Postbox tables ({@link dev.postbox.admin.PostboxAdmin}): what the
 * {@code ./postbox} operator commands and the web console read and do. Records in and out, keyset
 * paging, an actor on every action.
 */
package dev.postbox.admin;
