package dev.postbox.admin;

import dev.postbox.core.PostboxException;

/** The operations API could not read or act: the database failed, or a cursor is not valid. */
public class AdminException extends PostboxException {

  public AdminException(String message, Throwable cause) {
    super(message, cause);
  }

  public AdminException(String message) {
    super(message);
  }
}
