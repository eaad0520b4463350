package dev.postbox.testkit;

import java.lang.reflect.Method;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * JUnit Jupiter extension that injects a {@link PostboxTestContext} into test methods, lifecycle
 * methods and constructors; usually applied through {@link PostboxTest}.
 *
 * <p>The context is made for the scope of the method whose parameter asks for it and closed (its
 * pools, not its schema) when that scope ends: a test method and its {@code @BeforeEach} and
 * {@code @AfterEach} methods share one context, made for the test; a context asked for by a
 * {@code @BeforeAll} method belongs to the class and is then shared by all its tests. The
 * infrastructure behind it is {@link PostboxInfrastructure#shared()}, started once per JVM.
 *
 * <p>Stateless and thread-safe; needs JUnit Jupiter 5.13 or later (which closes {@link
 * AutoCloseable} values of the extension store).
 */
public final class PostboxExtension implements ParameterResolver {

  private static final ExtensionContext.Namespace NAMESPACE =
      ExtensionContext.Namespace.create(PostboxExtension.class);

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext extension) {
    return parameter.getParameter().getType() == PostboxTestContext.class;
  }

  @Override
  public Object resolveParameter(ParameterContext parameter, ExtensionContext extension) {
    return extension
        .getStore(NAMESPACE)
        .getOrComputeIfAbsent(
            PostboxTestContext.class, key -> newContext(extension), PostboxTestContext.class);
  }

  private static PostboxTestContext newContext(ExtensionContext extension) {
    PostboxTestContext context = PostboxTestContext.create(contextName(extension));
    boolean migrate =
        extension
            .getTestClass()
            .flatMap(c -> AnnotationSupport.findAnnotation(c, PostboxTest.class))
            .map(PostboxTest::migrate)
            .orElse(false);
    if (migrate) {
      context.migrate();
    }
    return context;
  }

  private static String contextName(ExtensionContext extension) {
    String owner = extension.getTestClass().map(Class::getSimpleName).orElse("test");
    return extension.getTestMethod().map(Method::getName).orElse(owner);
  }
}
