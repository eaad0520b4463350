#!/usr/bin/env bash
# Builds each project under samples/ the way a user's project is built: it knows Postbox only by its coordinates.
#  1. Postbox's library modules are deployed to a staging repository (target/samples/staging), the layout a
#     repository release has (front ends, the architecture tests and the spec are not deployed);
#  2. each sample is built with `mvn verify` and an EMPTY local repository (target/samples/clean-repo): everything
#     else comes from Maven Central, and the test kit fetches the Kafka broker's jars by itself at first use.
# Run by `./postbox test` after the test suite; needs network access to Maven Central.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/target/samples"
STAGE="$OUT/staging"
CLEAN="$OUT/clean-repo"
rm -rf "$OUT"
mkdir -p "$OUT"

echo "samples: deploying Postbox's library modules to $STAGE" >&2
# only the library modules are built here: the front ends are never deployed, and `./postbox test` may be running
# the tests of some of them (its lane A) from their target folders at this moment. Nor is anything installed: the
# deploy lifecycle installs first, and Maven 3.8's installer rewrites ~/.m2's jars in place (same inode, truncated
# and written again) whenever a jar was rebuilt, while lane A's test JVMs and the campaign processes they start read
# their classes from those very files (the likely cause of a CI run's quick-campaign round in which both producers
# were up and nothing committed for 150 s: a JVM started in that window can read a half-written jar)
mvn -B -ntp -q deploy -DskipTests -Dspotless.check.skip=true -Dmaven.install.skip=true \
  -pl '!postbox-cli,!postbox-demo,!postbox-verify,!postbox-bench,!postbox-architecture,!postbox-console,!postbox-spec' \
  -DaltDeploymentRepository="staging::file://$STAGE" > "$OUT/deploy.log" 2>&1 \
  || { tail -40 "$OUT/deploy.log" >&2; echo "samples: deploy to the staging repository failed" >&2; exit 1; }
for front_end in postbox-cli postbox-demo postbox-verify postbox-bench postbox-architecture postbox-spec; do
  if [ -d "$STAGE/dev/postbox/$front_end" ]; then
    echo "samples: $front_end must not be deployed" >&2; exit 1
  fi
done

cat > "$OUT/settings.xml" <<XML
<settings>
  <profiles>
    <profile>
      <id>postbox-staging</id>
      <repositories>
        <repository>
          <id>postbox-staging</id>
          <url>file://$STAGE</url>
          <releases><enabled>true</enabled></releases>
          <snapshots><enabled>true</enabled></snapshots>
        </repository>
      </repositories>
    </profile>
  </profiles>
  <activeProfiles><activeProfile>postbox-staging</activeProfile></activeProfiles>
</settings>
XML

for pom in samples/*/pom.xml; do
  sample="$(dirname "$pom")"
  echo "samples: building $sample with the empty local repository $CLEAN" >&2
  start=$(date +%s)
  if ! mvn -B -ntp -s "$OUT/settings.xml" -Dmaven.repo.local="$CLEAN" -f "$pom" verify > "$OUT/$(basename "$sample").log" 2>&1; then
    tail -60 "$OUT/$(basename "$sample").log" >&2
    echo "samples: $sample failed (log: $OUT/$(basename "$sample").log)" >&2
    exit 1
  fi
  grep -E 'Tests run:.*Fail' "$OUT/$(basename "$sample").log" | tail -1 >&2
  echo "samples: $sample OK in $(( $(date +%s) - start )) s" >&2
done
if ! ls "$CLEAN/org/apache/kafka/kafka_2.13" >/dev/null 2>&1; then
  echo "samples: the test kit did not fetch the broker's jars into the clean repository" >&2; exit 1
fi
echo "samples: all built from a clean local repository" >&2
