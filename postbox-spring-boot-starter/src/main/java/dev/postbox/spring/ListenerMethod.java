package dev.postbox.spring;

import dev.postbox.core.Message;
import dev.postbox.core.codec.JsonCodec;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.MessageHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.springframework.util.ReflectionUtils;

/**
 * Adapts a {@link PostboxListener} method to a {@link MessageHandler}: resolves each parameter from
 * the delivery (the delivery, the message, the payload as text or bytes or decoded from JSON into
 * an application type, the inbox transaction's connection) and unwraps what the method throws.
 */
final class ListenerMethod implements MessageHandler {

  /** Postbox's JSON codec (its default mapper), for payload parameters of an application type. */
  private static final JsonCodec JSON = JsonCodec.create();

  private final Object bean;
  private final Method method;
  private final List<Function<Delivery, Object>> arguments;

  ListenerMethod(Object bean, Method method) {
    this.bean = bean;
    this.method = method;
    this.arguments = new ArrayList<>();
    for (Class<?> type : method.getParameterTypes()) {
      arguments.add(resolver(type, method));
    }
    ReflectionUtils.makeAccessible(method);
  }

  private static Function<Delivery, Object> resolver(Class<?> type, Method method) {
    if (type == Delivery.class) {
      return d -> d;
    }
    if (type == Message.class) {
      return Delivery::message;
    }
    if (type == String.class) {
      return d -> d.message().payload().asString();
    }
    if (type == byte[].class) {
      return d -> d.message().payload().bytes();
    }
    if (type == Connection.class) {
      return d ->
          d.connection()
              .orElseThrow(() ->
                  new IllegalStateException(
                      method + " takes a Connection, which only an effectively-once topic has"));
    }
    if (decodable(type)) {
      // an undecodable payload throws DecodingException: a permanent failure (dead letters)
      return d -> JSON.decode(d.message().payload(), type);
    }
    throw new IllegalArgumentException(
        "@PostboxListener "
            + method
            + ": cannot supply a parameter of type "
            + type.getName()
            + " (supported: Delivery, Message, String, byte[], java.sql.Connection, or an"
            + " application type, decoded from the JSON payload)");
  }

  /** An application's own type (not the JDK's, not a primitive or an array): read from JSON. */
  private static boolean decodable(Class<?> type) {
    String name = type.getName();
    return !type.isPrimitive()
        && !type.isArray()
        && !type.isInterface()
        && !name.startsWith("java.")
        && !name.startsWith("javax.")
        && !name.startsWith("jdk.");
  }

  @Override
  public void handle(Delivery delivery) throws Exception {
    Object[] args = new Object[arguments.size()];
    for (int i = 0; i < args.length; i++) {
      args[i] = arguments.get(i).apply(delivery);
    }
    try {
      method.invoke(bean, args);
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof Exception ex) {
        throw ex;
      }
      throw e;
    }
  }

  @Override
  public String toString() {
    return method.getDeclaringClass().getSimpleName() + "." + method.getName();
  }
}
