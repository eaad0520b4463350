package dev.postbox.console;

import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ModelAttribute;

/** Every page's model gets the dependencies' state ({@link Health}) for its banners. */
@ControllerAdvice
class HealthAdvice {

  private final Health health;

  HealthAdvice(Health health) {
    this.health = health;
  }

  @ModelAttribute("health")
  Health health() {
    return health;
  }
}
