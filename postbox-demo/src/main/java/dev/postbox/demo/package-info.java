/** The shop demo, {@code ./postbox demo} (a front end on the library and the test kit). */
package dev.postbox.demo;
