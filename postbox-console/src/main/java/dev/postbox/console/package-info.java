/**
 * The web console ({@code ./postbox console}): a Spring Boot application (MVC, Security, Thymeleaf)
 * on the operations API of postbox-admin. Controllers only map requests to {@code PostboxAdmin}
 * calls made as the logged-in user; security (login, roles, CSRF, headers, login rate limit) is in
 * {@code ConsoleSecurity}. A front end, never deployed.
 */
package dev.postbox.console;
