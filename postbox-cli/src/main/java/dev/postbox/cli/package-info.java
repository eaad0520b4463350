/**
 * The operator commands of {@code ./postbox} ({@code migrate}, {@code trace}): a front end on
 * postbox-jdbc that needs only the database (it does not depend on the test kit).
 */
package dev.postbox.cli;
