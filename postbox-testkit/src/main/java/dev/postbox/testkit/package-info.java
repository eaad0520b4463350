/**
 * Test kit for Postbox: real infrastructure, no mocks.
 *
 * <ul>
 *   <li>{@link dev.postbox.testkit.KafkaBroker}: a single-node KRaft Kafka broker in its own JVM,
 *       which tests can kill with {@code kill -9}, freeze and restart.
 *   <li>{@link dev.postbox.testkit.KafkaCluster}: three KRaft brokers in their own JVMs
 *       (replication factor 3, {@code min.insync.replicas=2}), each killable, freezable and
 *       restartable on its own.
 *   <li>{@link dev.postbox.testkit.PostgresServer}: embedded PostgreSQL with honest durability and
 *       logical decoding enabled, isolated per test by schema.
 *   <li>{@link dev.postbox.testkit.ChildJvm}: runs a relay, a consumer or any main class as a
 *       separate process for crash tests.
 *   <li>{@link dev.postbox.testkit.PostboxInfrastructure}, {@link dev.postbox.testkit.PostboxTest}
 *       and {@link dev.postbox.testkit.PostboxTestContext}: one broker and one database per test
 *       JVM, a fresh schema and unique topics per test.
 * </ul>
 *
 * <p>Environment variables {@code POSTBOX_KAFKA_BOOTSTRAP} and {@code POSTBOX_PG_URL} switch to
 * external servers; {@code POSTBOX_KAFKA_CLASSPATH} replaces the broker's class path. Types in
 * {@code dev.postbox.testkit.internal} are not API.
 *
 * <p>Temporary data directories, default logs and the unpacked PostgreSQL binaries live in a folder
 * per OS user, {@code ${java.io.tmpdir}/postbox-testkit-<user.name>}, so that users sharing a
 * machine do not lock each other out; {@code -Dpostbox.testkit.dir} or the environment variable
 * {@code POSTBOX_TESTKIT_DIR} chooses another.
 */
package dev.postbox.testkit;
