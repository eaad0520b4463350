package dev.postbox.architecture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import dev.postbox.core.archfixture.CoreNamingKafka;
import dev.postbox.core.archfixture.CoreUsingKafka;
import dev.postbox.core.time.archfixture.SystemTicker;
import dev.postbox.demo.archfixture.FrontEndUsingEngineContract;
import dev.postbox.jdbc.archfixture.JdbcUsingCoreInternals;
import dev.postbox.kafka.archfixture.KafkaUsingEngineContract;
import dev.postbox.kafka.archfixture.KafkaUsingTestKit;
import dev.postbox.micrometer.archfixture.RawTimeUser;
import dev.postbox.redis.archfixture.RedisUsingJdbc;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Each rule of {@link ArchitectureRules}, evaluated against a class written to break it, reports
 * it: the rules can fail. The fixtures live in this module's test sources, in packages named like
 * the module they pretend to be in ({@code dev.postbox.core.archfixture} and so on); {@link
 * ArchitectureTest} never sees them, because it imports only the other modules' main jars, and each
 * test here imports exactly the fixture it names.
 */
class RulesCatchViolationsTest {

  private static JavaClasses only(Class<?>... classes) {
    return new ClassFileImporter().importClasses(classes);
  }

  private static List<String> violations(ArchRule rule, Class<?>... classes) {
    EvaluationResult result = rule.evaluate(only(classes));
    return result.getFailureReport().getDetails();
  }

  @Test
  void coreUsingAKafkaTypeFails() {
    assertThat(
            violations(ArchitectureRules.CORE_NAMES_NO_DRIVER_OR_TRANSPORT, CoreUsingKafka.class))
        .anySatisfy(v ->
            assertThat(v).contains(CoreUsingKafka.class.getName()).contains("org.apache.kafka"));
    assertThatThrownBy(() ->
            ArchitectureRules.CORE_NAMES_NO_DRIVER_OR_TRANSPORT.check(only(CoreUsingKafka.class)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("postbox-core depends on no JDBC driver, Kafka, RabbitMQ or Redis");
  }

  @Test
  void aTransportNamedInAStringIsFound() {
    assertThat(
            ArchitectureRules.transportNamesIn(
                only(CoreUsingKafka.class).get(CoreUsingKafka.class)))
        .contains("org/apache/kafka");
    assertThat(
            ArchitectureRules.transportNamesIn(
                only(CoreNamingKafka.class).get(CoreNamingKafka.class)))
        .contains("org.apache.kafka", "\"kafka\"");
  }

  @Test
  void anAdapterUsingAnotherAdapterFails() {
    assertThat(
            violations(
                ArchitectureRules.libraryModuleDependsOnCoreOnly(Modules.REDIS),
                RedisUsingJdbc.class))
        .anySatisfy(v ->
            assertThat(v)
                .contains(RedisUsingJdbc.class.getName())
                .contains("dev.postbox.jdbc.Outbox"));
  }

  @Test
  void productionCodeUsingTheTestKitFails() {
    assertThat(
            violations(
                ArchitectureRules.PRODUCTION_CODE_DOES_NOT_USE_THE_TEST_KIT,
                KafkaUsingTestKit.class))
        .anySatisfy(v ->
            assertThat(v)
                .contains(KafkaUsingTestKit.class.getName())
                .contains("dev.postbox.testkit.PostgresServer"));
  }

  @Test
  void anotherModulesInternalsOutsideTheEngineContractFail() {
    assertThat(
            violations(
                ArchitectureRules.INTERNAL_STAYS_IN_ITS_MODULE, JdbcUsingCoreInternals.class))
        .anySatisfy(v ->
            assertThat(v)
                .contains(JdbcUsingCoreInternals.class.getName())
                .contains("dev.postbox.core.engine.relay.RelayEngine"));
    // the contract is for adapters: a front end may not use it either
    assertThat(
            violations(
                ArchitectureRules.INTERNAL_STAYS_IN_ITS_MODULE, FrontEndUsingEngineContract.class))
        .anySatisfy(v -> assertThat(v).contains("dev.postbox.core.engine.DeliveryProcessor"));
    // an adapter using a declared contract class passes
    assertThat(
            violations(
                ArchitectureRules.INTERNAL_STAYS_IN_ITS_MODULE, KafkaUsingEngineContract.class))
        .isEmpty();
  }

  @Test
  void rawTimeInLibraryCodeFailsOutsideATimePackage() {
    List<String> found =
        violations(ArchitectureRules.NO_RAW_TIME_IN_LIBRARY_CODE, RawTimeUser.class);
    assertThat(found)
        .anySatisfy(v -> assertThat(v).contains("calls method <java.lang.System.nanoTime()>"))
        .anySatisfy(v -> assertThat(v).contains("references method <java.lang.System.nanoTime()>"))
        .anySatisfy(v -> assertThat(v).contains("java.lang.System.currentTimeMillis()"))
        .anySatisfy(v -> assertThat(v).contains("java.time.Instant.now()"))
        .anySatisfy(v -> assertThat(v).contains("java.lang.Thread.sleep(long)"));
    // SystemTicker, in a time package, calls System.nanoTime too: it is not reported
    assertThat(
            violations(
                ArchitectureRules.NO_RAW_TIME_IN_LIBRARY_CODE,
                SystemTicker.class,
                RawTimeUser.class))
        .isNotEmpty()
        .noneSatisfy(v -> assertThat(v).contains(SystemTicker.class.getName()));
  }
}
