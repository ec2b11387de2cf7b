# Sourced by tests/dist/check-arm64.sh and tests/dist/check-sid.sh: running programs in a Debian
# root of tools/debian-root.sh.
#   root_enter ROOTFS   lets pip inside reach the registry the way the host's does (the host's
#                       resolv.conf, pip.conf and CA bundle), makes WORK (a temporary directory)
#                       and sets the EXIT trap that undoes every root_bind, last first, and
#                       removes WORK;
#   root_bind SRC DST   mounts the host directory SRC at DST (a path inside the root).
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
MOUNTS=()

root_enter() {
  $SUDO cp /etc/resolv.conf "$1/etc/resolv.conf"
  [ ! -f /etc/pip.conf ] || $SUDO cp /etc/pip.conf "$1/etc/pip.conf"
  $SUDO cp /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/certs/ca-certificates.crt"
  WORK=$(mktemp -d)
  trap _root_leave EXIT
}

_root_leave() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do $SUDO umount -l "${MOUNTS[$i]}" 2>/dev/null || true; done
  rm -rf "$WORK"
}

root_bind() {
  $SUDO mkdir -p "$2"
  $SUDO mount --bind "$1" "$2"
  MOUNTS+=("$2")
}
