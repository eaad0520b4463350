package dev.postbox.spring.jpa;

import org.springframework.data.jpa.repository.JpaRepository;

/** Spring Data's repository of {@link Shipment}s (ListenerJpaIT). */
public interface ShipmentRepository extends JpaRepository<Shipment, Long> {
  long countByOrderId(String orderId);
}
