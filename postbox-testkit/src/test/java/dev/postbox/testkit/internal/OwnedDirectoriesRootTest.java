package dev.postbox.testkit.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where the test kit keeps its folders: one root per OS user, so that one user's run never locks
 * another out (issue 14 #7). A test cannot switch OS users, so it checks the choice of the root.
 */
class OwnedDirectoriesRootTest {

  private static Function<String, String> props(String tmp, String user, String override) {
    Map<String, String> m = new HashMap<>();
    m.put("java.io.tmpdir", tmp);
    m.put("user.name", user);
    if (override != null) {
      m.put(OwnedDirectories.DIR_PROPERTY, override);
    }
    return m::get;
  }

  private static Function<String, String> env(String override) {
    return name -> OwnedDirectories.DIR_ENV.equals(name) ? override : null;
  }

  @Test
  void twoUsersGetTwoRootsUnderTheTemporaryFolder() {
    Path alice = OwnedDirectories.root(props("/tmp", "alice", null), env(null));
    Path bob = OwnedDirectories.root(props("/tmp", "bob", null), env(null));

    assertThat(alice).isNotEqualTo(bob);
    assertThat(alice).isEqualTo(Path.of("/tmp", "postbox-testkit-alice"));
    assertThat(bob).isEqualTo(Path.of("/tmp", "postbox-testkit-bob"));
  }

  @Test
  void thisJvmsRootIsNamedForItsUser() {
    assertThat(OwnedDirectories.root().getFileName().toString())
        .isEqualTo(
            "postbox-testkit-" + OwnedDirectories.folderSafe(System.getProperty("user.name")));
  }

  @Test
  void aUserNameThatIsNoFolderNameIsMadeOne() {
    assertThat(OwnedDirectories.root(props("/tmp", "CORP\\jane doe", null), env(null)))
        .isEqualTo(Path.of("/tmp", "postbox-testkit-CORP_jane_doe"));
    assertThat(OwnedDirectories.root(props("/tmp", "../x", null), env(null)))
        .isEqualTo(Path.of("/tmp", "postbox-testkit-.._x"));
    assertThat(OwnedDirectories.root(props("/tmp", null, null), env(null)))
        .isEqualTo(Path.of("/tmp", "postbox-testkit-unknown"));
  }

  @Test
  void theSystemPropertyWinsOverTheEnvironmentWhichWinsOverTheDefault() {
    assertThat(OwnedDirectories.root(props("/tmp", "alice", "/data/p"), env("/env/p")))
        .isEqualTo(Path.of("/data/p"));
    assertThat(OwnedDirectories.root(props("/tmp", "alice", null), env("/env/p")))
        .isEqualTo(Path.of("/env/p"));
    assertThat(OwnedDirectories.root(props("/tmp", "alice", " "), env("")))
        .isEqualTo(Path.of("/tmp", "postbox-testkit-alice"));
  }

  @Test
  void embeddedPostgresUnpacksItsBinariesUnderTheRootNotInASharedTemporaryFolder() {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        System.getProperty(EmbeddedPostgresServer.ZONKY_WORKING_DIR) == null);

    assertThat(EmbeddedPostgresServer.binariesDirectory())
        .contains(OwnedDirectories.root().resolve("embedded-pg"));
  }

  @Test
  void createsLockedDirectoriesUnderTheGivenRoot(@TempDir Path tmp) throws Exception {
    Path root = tmp.resolve("not-yet").resolve("root");

    Path dir = OwnedDirectories.create(root, "x-");
    try {
      assertThat(dir.getParent()).isEqualTo(root);
      assertThat(dir.getFileName().toString()).startsWith("x-");
      assertThat(dir.resolve(".owner.lock")).exists();
      if (root.getFileSystem().supportedFileAttributeViews().contains("posix")) {
        assertThat(Files.getPosixFilePermissions(root))
            .isEqualTo(java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
      }
    } finally {
      OwnedDirectories.delete(dir);
    }
    assertThat(dir).doesNotExist();
  }

  @Test
  void theErrorNamesTheFolderTheUserAndHowToChooseAnother(@TempDir Path tmp) throws Exception {
    Path notAFolder = Files.writeString(tmp.resolve("a-file"), "x");

    assertThatThrownBy(() -> OwnedDirectories.create(notAFolder, "x-"))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining("cannot create a data directory under " + notAFolder)
        .hasMessageContaining("OS user '" + System.getProperty("user.name") + "'")
        .hasMessageContaining("-D" + OwnedDirectories.DIR_PROPERTY + "=")
        .hasMessageContaining(OwnedDirectories.DIR_ENV);
  }
}
