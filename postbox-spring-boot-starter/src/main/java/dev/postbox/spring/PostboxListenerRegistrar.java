package dev.postbox.spring;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.context.EnvironmentAware;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.env.Environment;

/**
 * Finds {@link PostboxListener} methods on the application's beans and records them as listener
 * endpoints for {@link PostboxConsumers}, which subscribes them when the context starts.
 */
final class PostboxListenerRegistrar implements BeanPostProcessor, EnvironmentAware {

  /** One annotated method: its listener id, its topic and its handler. */
  record Endpoint(String id, String topic, ListenerMethod handler) {}

  private final List<Endpoint> endpoints = new ArrayList<>();
  private Environment environment;

  @Override
  public void setEnvironment(Environment environment) {
    this.environment = environment;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    Class<?> type = AopUtils.getTargetClass(bean);
    Map<Method, PostboxListener> methods =
        MethodIntrospector.selectMethods(
            type,
            (MethodIntrospector.MetadataLookup<PostboxListener>)
                m -> AnnotatedElementUtils.findMergedAnnotation(m, PostboxListener.class));
    methods.forEach((method, listener) -> {
      String topic = environment.resolveRequiredPlaceholders(listener.topic());
      String id = environment.resolveRequiredPlaceholders(listener.id()).strip();
      if (id.isEmpty()) {
        throw new PostboxConfigurationException(
            List.of(
                "@PostboxListener "
                    + type.getSimpleName()
                    + "."
                    + method.getName()
                    + " (bean '"
                    + beanName
                    + "') has no id: give it one that never changes, @PostboxListener(id ="
                    + " \"shipping\", topic = ...); the id names its consumer group and its inbox"
                    + " records, so a name derived from the method would start a new group"
                    + " when the method is renamed"));
      }
      Method invocable = AopUtils.selectInvocableMethod(method, bean.getClass());
      synchronized (endpoints) {
        endpoints.add(new Endpoint(id, topic, new ListenerMethod(bean, invocable)));
      }
    });
    return bean;
  }

  /** The endpoints found so far. */
  List<Endpoint> endpoints() {
    synchronized (endpoints) {
      return List.copyOf(endpoints);
    }
  }
}
