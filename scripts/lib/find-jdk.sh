# Sourced by bin/agent-sandbox and the scripts: finds a JDK >= 21.
# The machines' default java is 17, so PATH alone is not enough: $JAVA_HOME is tried first,
# then every JDK under /usr/lib/jvm (newest first), then java on PATH.

agent_sandbox_java_major() {
  "$1" -XshowSettings:properties -version 2>&1 |
    awk -F'= ' '/java.specification.version/ { split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit }'
}

# Prints the JDK home (the directory holding bin/java) or fails listing what was tried.
agent_sandbox_find_jdk() {
  local candidates=() tried=() candidate major
  if [ -n "${JAVA_HOME:-}" ]; then candidates+=("$JAVA_HOME/bin/java"); fi
  if [ -d /usr/lib/jvm ]; then
    while IFS= read -r dir; do candidates+=("$dir/bin/java"); done < <(ls -d /usr/lib/jvm/*/ 2>/dev/null | sed 's:/$::' | sort -V -r)
  fi
  if command -v java >/dev/null 2>&1; then candidates+=("$(readlink -f "$(command -v java)")"); fi
  for candidate in "${candidates[@]}"; do
    if [ -x "$candidate" ]; then
      major="$(agent_sandbox_java_major "$candidate")"
      if [ -n "$major" ] && [ "$major" -ge 21 ] 2>/dev/null; then
        dirname "$(dirname "$(readlink -f "$candidate")")"
        return 0
      fi
      tried+=("$candidate (Java ${major:-unknown})")
    else
      tried+=("$candidate (not executable)")
    fi
  done
  {
    echo "agent-sandbox: find a JDK 21 or newer: none found (install one, e.g. apt-get install openjdk-21-jdk-headless, or set JAVA_HOME)"
    for t in "${tried[@]}"; do echo "  tried $t"; done
  } >&2
  return 1
}
