# shellcheck shell=bash
# The host's own apt sources for one Debian suite, for the lab scripts that fetch from the host's
# package mirror at setup (nspawn.sh: the node image; debrepo.sh: the lab's Debian repository).
# Nothing these scripts write may name the mirror: mirror_hosts and redact keep its host names out
# of files and logs. Source it; it sets no shell options of its own.

# host_sources SUITE: the host's apt sources for SUITE (and its -updates/-security suites) on
# stdout: deb822 stanzas when the host has any, else one-line entries. Comments are dropped.
host_sources() {
  local suite=$1 f out=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    out+=$(awk -v suite="$suite" '
      BEGIN { RS = "" }
      {
        n = split($0, lines, "\n"); keep = ""; enabled = 1; types = 0; suites = 0
        for (k = 1; k <= n; k++) {
          l = lines[k]
          if (l ~ /^[ \t]*#/) continue
          keep = keep l "\n"
          if (tolower(l) ~ /^enabled:[ \t]*no/) enabled = 0
          if (l ~ /^Types:/ && (substr(l, 7) " ") ~ /[ \t]deb[ \t]/) types = 1
          if (l ~ /^Suites:/ && (substr(l, 8) " ") ~ ("[ \t]" suite "[ \t-]")) suites = 1
        }
        if (enabled && types && suites) printf "%s\n", keep
      }' "$f")
    out+=$'\n'
  done
  if [ -n "${out//[[:space:]]/}" ]; then
    printf '%s\n' "$out"
    return 0
  fi
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | grep -E "^[[:space:]]*deb[[:space:]].*[[:space:]]$suite([[:space:]-]|$)" || true
}

# mirror_hosts SUITE: the host names of the mirrors in the host's apt sources for SUITE (kept in
# memory only).
mirror_hosts() {
  host_sources "$1" | grep -oE '[a-z+]+://[^/[:space:]]+' | sed 's#^[^:]*://##; s#^[^@]*@##; s#:[0-9]*$##' | sort -u
}

# redact TEXT: TEXT with every host name of $MIRROR_HOSTS (set from mirror_hosts) replaced.
redact() {
  local text=$1 host
  while read -r host; do
    [ -n "$host" ] || continue
    text=${text//"$host"/<apt-mirror>}
  done <<< "$MIRROR_HOSTS"
  printf '%s\n' "$text"
}
