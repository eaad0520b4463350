package dev.postbox.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * The build gives every test a default timeout (the root pom's Surefire configuration parameter),
 * so that a hung test fails instead of holding CI for its whole time limit.
 */
@ExtendWith(DefaultTimeoutTest.Parameters.class)
class DefaultTimeoutTest {

  @Test
  void everyTestRunsUnderADefaultTimeout(ExtensionContext context) {
    assertThat(context.getConfigurationParameter("junit.jupiter.execution.timeout.default"))
        .as("junit.jupiter.execution.timeout.default, set by the root pom for every module")
        .hasValue("10 m");
  }

  /** Hands the test its {@link ExtensionContext}, to read the configuration parameters. */
  static final class Parameters implements ParameterResolver {
    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
      return p.getParameter().getType() == ExtensionContext.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext e) {
      return e;
    }
  }
}
