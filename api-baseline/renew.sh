#!/usr/bin/env bash
# Renews the public-API baseline (README.md here): builds the library modules and keeps the class files of
# each jar as api-baseline/<module>.jar. Run it only when a change to a public type is meant to break
# binary compatibility, and say which change in the commit message.
set -euo pipefail
cd "$(dirname "$0")/.."
modules=(core jdbc kafka redis rabbitmq micrometer resilience4j admin testkit spring-boot-starter)
mvn -B -ntp -q package -DskipTests -Djapicmp.skip=true -pl "$(printf 'postbox-%s,' "${modules[@]}" | sed 's/,$//')" -am
for m in "${modules[@]}"; do
  src="postbox-$m/target/postbox-$m-0.1.0-SNAPSHOT.jar"
  tmp="$(mktemp -d)"
  (cd "$tmp" && unzip -q "$OLDPWD/$src" '*.class' && zip -q -r -X "$OLDPWD/api-baseline/postbox-$m.jar" .)
  rm -rf "$tmp"
done
ls -l api-baseline/*.jar
