/**
 * The shop demo and the {@code ./postbox} commands (a front end on the library and the test kit).
 */
package dev.postbox.demo;
