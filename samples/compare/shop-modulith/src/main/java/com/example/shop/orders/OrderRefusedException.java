package com.example.shop.orders;

/** The order is refused after it was written: the transaction rolls back, row and event alike. */
public class OrderRefusedException extends RuntimeException {
  public OrderRefusedException(String message) {
    super(message);
  }
}
