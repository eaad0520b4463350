package dev.postbox.core.engine;

import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * A worker's hold on a record it handles, as a transport sees it: {@link #getAsBoolean()} whether
 * it may start (or try again; it may wait, and false leaves the record to the next owner), and
 * {@link #mayCommit()} whether the effect's transaction may commit now that the handler ran.
 *
 * <p>Why the second check: a process can stop (a pause, a long GC) after a record passed the first
 * check and before its transaction opened; when it resumes, its partition may belong to another
 * member, and committing then would be a zombie apply (a later record of the key may already have
 * been applied by the successor). Asked inside the transaction, right before the commit, the check
 * leaves only the commit itself in that window, and a transaction that sat open through the pause
 * is ended by the database's idle-in-transaction timeout. A transport whose hold cannot lapse that
 * way passes a plain {@link BooleanSupplier}: its transactions commit without this check.
 */
public interface Ownership extends BooleanSupplier {

  /**
   * Inside the effect's transaction, before it commits: {@code false} rolls it back and leaves the
   * record unfinished (it is redelivered to whoever owns it next). May wait, briefly, until the
   * transport knows.
   */
  boolean mayCommit();

  /** An ownership from its two checks. */
  static Ownership of(BooleanSupplier mayStart, BooleanSupplier mayCommit) {
    Objects.requireNonNull(mayStart, "mayStart");
    Objects.requireNonNull(mayCommit, "mayCommit");
    return new Ownership() {
      @Override
      public boolean getAsBoolean() {
        return mayStart.getAsBoolean();
      }

      @Override
      public boolean mayCommit() {
        return mayCommit.getAsBoolean();
      }
    };
  }

  /**
   * Before a commit on {@code owned}'s behalf: throws (rolling the transaction back) if {@code
   * owned} is an {@code Ownership} that does not allow it; a plain supplier allows every commit.
   */
  static void confirmBeforeCommit(BooleanSupplier owned) {
    if (owned instanceof Ownership o && !o.mayCommit()) {
      throw new OwnershipLost();
    }
  }
}
