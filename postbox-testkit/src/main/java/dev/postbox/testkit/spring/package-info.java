/**
 * Spring Boot test support: {@link dev.postbox.testkit.spring.PostboxSpringBootTest} runs a
 * {@code @SpringBootTest} on the test kit's PostgreSQL and Kafka (or RabbitMQ), with the delivery
 * table's topics created and the application closed before the test kit. Needs {@code
 * spring-boot-test} and {@code spring-test} on the test class path (Spring Boot's {@code
 * spring-boot-starter-test}); nothing else in the test kit uses Spring.
 */
package dev.postbox.testkit.spring;
