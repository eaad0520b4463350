package dev.postbox.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns a refused Postbox configuration into Spring Boot's start-up failure report: the list of
 * problems, without the chain of beans that happened to need the settings first.
 */
final class PostboxConfigurationFailureAnalyzer
    extends AbstractFailureAnalyzer<PostboxConfigurationException> {

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, PostboxConfigurationException cause) {
    return new FailureAnalysis(
        cause.getMessage(),
        "Fix each postbox.* key listed above (the README's Spring Boot section lists the keys; a"
            + " topic name with dots is written in brackets: postbox.topics[order.created]).",
        cause);
  }
}
