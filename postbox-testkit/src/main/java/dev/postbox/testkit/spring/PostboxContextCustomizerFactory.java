package dev.postbox.testkit.spring;

import java.util.List;
import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.TestContextAnnotationUtils;

/** Makes the {@link PostboxContextCustomizer} of a {@link PostboxSpringBootTest} class. */
public final class PostboxContextCustomizerFactory implements ContextCustomizerFactory {

  /** Instantiated by the Spring TestContext framework. */
  public PostboxContextCustomizerFactory() {}

  @Override
  public ContextCustomizer createContextCustomizer(
      Class<?> testClass, List<ContextConfigurationAttributes> configAttributes) {
    PostboxSpringBootTest test =
        TestContextAnnotationUtils.findMergedAnnotation(testClass, PostboxSpringBootTest.class);
    if (test == null) {
      return null;
    }
    String schema = test.schema().isBlank() ? testClass.getSimpleName() : test.schema();
    return new PostboxContextCustomizer(schema, List.of(test.topics()), test.partitions());
  }
}
