package com.example.shop.inventory;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/** The sample's stand-in for the warehouse's API: it logs the call. */
@Component
class LoggingWarehouse implements Warehouse {

  private static final Logger LOG = LoggerFactory.getLogger(LoggingWarehouse.class);

  @Override
  public void reserved(OrderCreated order) {
    LOG.debug("warehouse: set aside {} x {} for order {}", order.quantity(), order.sku(), order.order());
  }
}
