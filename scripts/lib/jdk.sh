# Sourced by the project's scripts: exports JAVA_HOME as a JDK >= 21.
#
# Debian 12's default java is 17, so PATH alone is not enough. Tried in order: $JAVA_HOME, the
# JDKs under /usr/lib/jvm (newest first), then the java on PATH. A JDK (with javac) is needed to
# build; the launcher only needs a runtime, so it passes "runtime".

asb_java_major() {
  # Prints the feature version of the java binary $1 (17, 21, 25, ...), or nothing. The JDK's
  # `release` file says it without starting a JVM (which would add its own start to every command).
  local release version
  release="$(dirname "$(dirname "$1")")/release"
  if [ -f "$release" ]; then
    version=$(sed -n 's/^JAVA_VERSION="\([0-9][0-9]*\).*/\1/p' "$release" | head -n 1)
    if [ -n "$version" ]; then
      printf '%s\n' "$version"
      return 0
    fi
  fi
  "$1" -XshowSettings:properties -version 2>&1 |
    sed -n 's/^ *java\.specification\.version = \([0-9][0-9]*\).*/\1/p' | head -n 1
}

asb_find_jdk() {
  local need="${1:-jdk}" tried=() candidate major
  local candidates=()
  [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
  if [ -d /usr/lib/jvm ]; then
    while IFS= read -r dir; do candidates+=("$dir"); done < <(ls -d /usr/lib/jvm/*/ 2>/dev/null | sed 's#/$##' | sort -rV)
  fi
  if command -v java >/dev/null 2>&1; then
    candidates+=("$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")")
  fi
  for candidate in "${candidates[@]}"; do
    if [ ! -x "$candidate/bin/java" ]; then continue; fi
    if [ "$need" = jdk ] && [ ! -x "$candidate/bin/javac" ]; then
      tried+=("$candidate (no javac)"); continue
    fi
    major=$(asb_java_major "$candidate/bin/java")
    if [ -n "$major" ] && [ "$major" -ge 21 ]; then
      export JAVA_HOME="$candidate"
      return 0
    fi
    tried+=("$candidate (Java ${major:-unknown})")
  done
  echo "agent-sandbox: no JDK 21 or newer found; tried: ${tried[*]:-nothing} (install one, e.g. apt-get install openjdk-21-jdk-headless where available, or set JAVA_HOME)" >&2
  return 1
}
