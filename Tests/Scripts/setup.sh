#!/usr/bin/env bash
# Installs what baton's build, tests and demo need on a fresh Debian 12 machine
# with the Swift toolchain: the C libraries' -dev packages, the tools the tests
# drive (editors, btmon, mandoc), and a Python venv holding the simulated radio
# (bumble). Quick and quiet when everything is already there.
#
#   Tests/Scripts/setup.sh              everything the tests need
#   Tests/Scripts/setup.sh --build      only what building needs
#   Tests/Scripts/setup.sh --deb        what building and packaging need
#                                       (for Tests/Scripts/deb.sh)
#   Tests/Scripts/setup.sh --profiling  everything, and valgrind
#                                       (for Tests/Scripts/link-order.sh)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)

build_packages=(libbluetooth-dev libsodium-dev libinih-dev libsqlite3-dev libsystemd-dev pkg-config)
test_packages=(mandoc bluez dbus vim nano emacs-nox tmux strace)

packages=("${build_packages[@]}")
case "${1:-}" in
  --build) ;;
  --deb) packages+=(dpkg-dev lintian) ;;
  *) packages+=("${test_packages[@]}") ;;
esac
[ "${1:-}" = "--profiling" ] && packages+=(valgrind)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

case "${1:-}" in --build | --deb) exit 0 ;; esac

venv="$top/.venv"
req="$top/Tests/Radio/requirements.txt"
if [ ! -x "$venv/bin/python3" ] || ! cmp -s "$req" "$venv/.requirements"; then
  echo "setup: creating the simulated-radio venv in $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
  cp "$req" "$venv/.requirements"
fi
