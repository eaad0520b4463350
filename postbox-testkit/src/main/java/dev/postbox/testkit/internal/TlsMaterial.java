package dev.postbox.testkit.internal;

import dev.postbox.testkit.InfrastructureStartupException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A throwaway TLS identity for a test server: a self-signed EC key pair in a PKCS#12 key store and
 * a PKCS#12 trust store holding its certificate, made with the running JDK's {@code keytool} (no
 * extra dependency: the JDK ships it, and three calls do not justify a crypto library). The
 * certificate names {@code localhost}, {@code 127.0.0.1} and the given host, so clients keep
 * hostname verification on.
 *
 * @param keyStore the server's key store (PKCS#12)
 * @param trustStore the clients' trust store (PKCS#12)
 * @param password the password of both stores and of the key
 */
public record TlsMaterial(Path keyStore, Path trustStore, String password) {

  private static final long KEYTOOL_TIMEOUT_SECONDS = 60;

  /**
   * The material in {@code dir}, generated there (with a new random password) unless present from
   * an earlier start.
   */
  public static TlsMaterial inDirectory(Path dir, String host) {
    Path keyStore = dir.resolve("server.p12");
    Path trustStore = dir.resolve("truststore.p12");
    Path passwordFile = dir.resolve("password");
    try {
      if (Files.exists(keyStore) && Files.exists(trustStore) && Files.exists(passwordFile)) {
        return new TlsMaterial(
            keyStore, trustStore, Files.readString(passwordFile, StandardCharsets.UTF_8).strip());
      }
      Files.createDirectories(dir);
      for (Path p : List.of(keyStore, trustStore, dir.resolve("server.crt"))) {
        Files.deleteIfExists(p);
      }
      byte[] random = new byte[16];
      new SecureRandom().nextBytes(random);
      String password = HexFormat.of().formatHex(random);
      Path cert = dir.resolve("server.crt");
      String san = "SAN=dns:localhost,ip:127.0.0.1" + (isIp(host) ? ",ip:" : ",dns:") + host;
      keytool(
          "-genkeypair",
          "-alias",
          "server",
          "-keyalg",
          "EC",
          "-groupname",
          "secp256r1",
          "-dname",
          "CN=postbox-testkit",
          "-ext",
          san,
          "-validity",
          "30",
          "-storetype",
          "PKCS12",
          "-keystore",
          keyStore.toString(),
          "-storepass",
          password,
          "-keypass",
          password);
      keytool(
          "-exportcert",
          "-rfc",
          "-alias",
          "server",
          "-keystore",
          keyStore.toString(),
          "-storepass",
          password,
          "-file",
          cert.toString());
      keytool(
          "-importcert",
          "-noprompt",
          "-alias",
          "server",
          "-file",
          cert.toString(),
          "-storetype",
          "PKCS12",
          "-keystore",
          trustStore.toString(),
          "-storepass",
          password);
      Files.writeString(passwordFile, password, StandardCharsets.UTF_8);
      return new TlsMaterial(keyStore, trustStore, password);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the TLS material in " + dir, e);
    }
  }

  /**
   * The server's certificate and private key as PEM files next to the key store ({@code
   * server.crt}, written by {@code keytool}, and {@code server.key}, PKCS#8), for servers that do
   * not read PKCS#12 (RabbitMQ).
   *
   * @return the certificate's and the key's paths
   */
  public List<Path> pemFiles() {
    Path cert = keyStore.resolveSibling("server.crt");
    Path key = keyStore.resolveSibling("server.key");
    try {
      if (!Files.exists(key)) {
        java.security.KeyStore ks = java.security.KeyStore.getInstance("PKCS12");
        try (java.io.InputStream in = Files.newInputStream(keyStore)) {
          ks.load(in, password.toCharArray());
        }
        byte[] der = ks.getKey("server", password.toCharArray()).getEncoded();
        String pem =
            "-----BEGIN PRIVATE KEY-----\n"
                + java.util.Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
                + "\n-----END PRIVATE KEY-----\n";
        Files.writeString(key, pem, StandardCharsets.US_ASCII);
      }
      return List.of(cert, key);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the PEM key in " + key.getParent(), e);
    } catch (java.security.GeneralSecurityException e) {
      throw new InfrastructureStartupException("cannot read the key store " + keyStore, e);
    }
  }

  private static boolean isIp(String host) {
    return host.matches("[0-9.]+") || host.contains(":");
  }

  private static void keytool(String... args) throws IOException {
    Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
    List<String> command = new ArrayList<>();
    command.add(keytool.toString());
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    try {
      boolean done = p.waitFor(KEYTOOL_TIMEOUT_SECONDS, TimeUnit.SECONDS);
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!done) {
        p.destroyForcibly();
        throw new InfrastructureStartupException(
            "keytool " + args[0] + " took longer than " + KEYTOOL_TIMEOUT_SECONDS + " s");
      }
      if (p.exitValue() != 0) {
        throw new InfrastructureStartupException(
            "keytool " + args[0] + " failed (exit " + p.exitValue() + "): " + out.strip());
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new InfrastructureStartupException("interrupted while running keytool", e);
    }
  }
}
