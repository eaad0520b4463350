#!/usr/bin/env bash
# Renews the public-API baseline (README.md here): builds the library modules and keeps the class files of
# each jar as api-baseline/<module>.jar. Run it only when a change to a public type is meant to break
# binary compatibility, and say which change in the commit message. It builds from clean and writes each jar anew: an
# incremental build keeps the class files of removed types in target/classes, and zip adds to an existing archive;
# a baseline holding removed types fails every clean build.
set -euo pipefail
cd "$(dirname "$0")/.."
modules=(core jdbc kafka redis rabbitmq micrometer resilience4j admin testkit spring-boot-starter)
mvn -B -ntp -q clean package -DskipTests -Djapicmp.skip=true -pl "$(printf 'postbox-%s,' "${modules[@]}" | sed 's/,$//')" -am
for m in "${modules[@]}"; do
  src="postbox-$m/target/postbox-$m-0.1.0-SNAPSHOT.jar"
  tmp="$(mktemp -d)"
  rm -f "api-baseline/postbox-$m.jar" # zip adds to an existing archive: start from none
  (cd "$tmp" && unzip -q "$OLDPWD/$src" '*.class' && zip -q -r -X "$OLDPWD/api-baseline/postbox-$m.jar" .)
  rm -rf "$tmp"
done
ls -l api-baseline/*.jar
