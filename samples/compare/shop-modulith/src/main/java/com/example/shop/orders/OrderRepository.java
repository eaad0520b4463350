package com.example.shop.orders;

import org.springframework.data.jpa.repository.JpaRepository;

/** Spring Data JPA repository of orders. */
public interface OrderRepository extends JpaRepository<PurchaseOrder, String> {}
