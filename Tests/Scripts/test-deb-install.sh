#!/usr/bin/env bash
# The Debian package, installed as a user would: apt-get installs it into a
# clean Debian 12 root (debootstrap --variant=minbase, in a chroot), pulling
# its Depends from the mirror, then a user of that root runs the installed
# baton: --version, keygen, check with the example configuration, and the
# agent on the simulated radio (Tests/Radio/radio.py on the host; the chroot
# shares the host's network, so tcp:127.0.0.1:PORT reaches it), asked for its
# status over its control socket and stopped with SIGTERM (exit 0). Last,
# systemd-analyze verify --user on the installed unit, in the root (with
# systemd and man-db installed for it). Part of 'make test'.
#
#   Tests/Scripts/test-deb-install.sh [DEB]
#
# Without DEB it builds the package first (Tests/Scripts/deb.sh). Runs as
# root (debootstrap, chroot, mount), through sudo when started as another
# user. The pristine root is cached as a tarball in
# Tests/Scripts/cache (gitignored), named for the suite and the month: it is
# built once a month (60 to 80 s here from deb.debian.org, 95 MB) and
# unpacked afresh for every run; the chroot's package lists are updated each
# run.
# Environment: DEB_MIRROR (default http://deb.debian.org/debian), DEB_KEEP=1
# keeps the work folder.
set -euo pipefail
fail() { echo "test-deb-install: FAIL: $*" >&2; exit 1; }
say() { echo "test-deb-install: $*" >&2; }
[ $# -le 1 ] || fail "expected at most one package, got: $*"
# debootstrap, chroot and mount need root; as 'make test' runs with sudo for apt.
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || fail "needs root (debootstrap, chroot, mount), and there is no sudo"
  exec sudo --preserve-env=DEB_MIRROR,DEB_KEEP -- "$(realpath "$0")" "$@"
fi
deb=
if [ $# -eq 1 ]; then
  deb=$(realpath "$1")
fi
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
start=$SECONDS
suite=bookworm
mirror=${DEB_MIRROR:-http://deb.debian.org/debian}
cache="$top/Tests/Scripts/cache"

[ -n "$deb" ] || deb=$(Tests/Scripts/deb.sh | tail -n 1)
[ -f "$deb" ] || fail "no package at $deb"
version=$(dpkg-deb -f "$deb" Version)

Tests/Scripts/setup.sh # the simulated radio's venv
if ! dpkg-query -W -f='${Status}' debootstrap 2>/dev/null | grep -q "install ok installed"; then
  say "installing debootstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

# --- the pristine root, cached ------------------------------------------------
# Named for the month: a root some weeks old is still a clean Debian 12 (the
# chroot's lists are updated before installing), and CI builds it once.
pristine="$cache/$suite-minbase-$(date -u +%Y-%m).tar.gz"
if [ -f "$pristine" ]; then
  say "pristine root: $(basename "$pristine") (cached)"
else
  mkdir -p "$cache"
  building=$(mktemp -d "$cache/building.XXXXXX")
  trap 'rm -rf --one-file-system "$building"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  built=$SECONDS
  say "building a $suite root with debootstrap --variant=minbase from $mirror"
  debootstrap --variant=minbase "$suite" "$building/root" "$mirror" >"$building/debootstrap.log" 2>&1 ||
    { tail -n 20 "$building/debootstrap.log" >&2; fail "debootstrap failed (log above)"; }
  # The sources of an installed Debian 12: the updates and security suites too.
  cat >"$building/root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb ${mirror%/debian}/debian-security $suite-security main
EOF
  rm -f "$building/root/etc/resolv.conf" # the host's, copied in for each run
  tar --numeric-owner -C "$building/root" -I 'gzip -1' -cf "$building/root.tar.gz" .
  rm -f "$cache/$suite"-minbase-*.tar.gz
  mv "$building/root.tar.gz" "$pristine"
  rm -rf --one-file-system "$building"
  trap - EXIT INT TERM
  say "pristine root built in $((SECONDS - built)) s: $(basename "$pristine"), $(stat -c %s "$pristine") bytes"
fi

# --- a fresh root from it -------------------------------------------------------
scratch=$(mktemp -d /tmp/baton-deb-install.XXXXXX)
root="$scratch/root"
radio_pid=
agent_pid=
cleanup() { # [STATUS]: the script's, else the last command's
  local status=${1:-$?}
  trap - EXIT INT TERM
  set +e
  [ -n "$agent_pid" ] && kill -KILL "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
  [ -n "$radio_pid" ] && kill -TERM "$radio_pid" 2>/dev/null && wait "$radio_pid" 2>/dev/null
  local mounted=()
  for mount in dev proc; do
    if mountpoint -q "$root/$mount"; then
      umount "$root/$mount" || umount -l "$root/$mount"
    fi
    mountpoint -q "$root/$mount" && mounted+=("$root/$mount")
  done
  if [ ${#mounted[@]} -gt 0 ]; then
    echo "test-deb-install: still mounted, $scratch left in place: ${mounted[*]}" >&2
    exit 1
  fi
  if [ -n "${DEB_KEEP:-}" ]; then
    echo "test-deb-install: kept $scratch" >&2
  else
    rm -rf --one-file-system "$scratch"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'cleanup 130' INT
trap 'cleanup 143' TERM

unpacked=$SECONDS
mkdir "$root"
tar --numeric-owner -C "$root" -xzpf "$pristine"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
say "root unpacked in $((SECONDS - unpacked)) s"

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }

# --- apt-get install ./baton_*.deb ----------------------------------------------
installing=$SECONDS
cp "$deb" "$root/tmp/"
apt_log="$scratch/apt.log"
if ! in_root sh -c "apt-get update -q && cd /tmp &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ./$(basename "$deb")" \
    >"$apt_log" 2>&1; then
  tail -n 30 "$apt_log" >&2
  fail "apt-get install ./$(basename "$deb") failed in the $suite root (above)"
fi
installed=$(in_root dpkg-query -W -f='${Package} ${Version} ${Status}\n')
grep -qx "baton $version install ok installed" <<<"$installed" ||
  fail "baton $version is not installed: $(grep '^baton ' <<<"$installed")"
# What apt pulled from the mirror: baton's Depends that a minimal root lacks.
new=$(sed -n '/^The following NEW packages will be installed:/,/^[^ ]/p' "$apt_log" | sed '1d;$d' | tr -s ' \n' ' ')
for library in libsodium23 libbluetooth3 libinih1 libsqlite3-0 procps; do
  [[ " $new " == *" $library "* ]] || fail "apt-get did not pull $library; it installed: $new"
  grep -q "^$library .* install ok installed$" <<<"$installed" || fail "$library is not installed"
done
say "apt-get install: $(wc -w <<<"$new") new packages ($new) in $((SECONDS - installing)) s"

# --- the installed files, run by a user of the root --------------------------------
in_root useradd --create-home --shell /bin/bash alice
as_alice() {
  chroot "$root" setpriv --reuid=alice --regid=alice --init-groups \
    env -i HOME=/home/alice USER=alice PATH=/usr/bin:/bin LANG=C.UTF-8 "$@"
}
[ "$(as_alice id -un)" = alice ] || fail "cannot run as alice in the root"
[ "$(as_alice sh -c 'command -v baton')" = /usr/bin/baton ] ||
  fail "baton is not /usr/bin/baton in the root"

upstream=${version%-*}
printed=$(as_alice baton --version) || fail "baton --version failed: $printed"
[[ $printed =~ ^baton\ $upstream\ \(handoff\ protocol\ [0-9]+\)$ ]] ||
  fail "baton --version printed '$printed'"

# As README's "Running it for real" says: a key, and the example
# configuration with the controller and a folder set.
radio_out="$scratch/radio.out"
mkfifo "$radio_out"
setsid .venv/bin/python3 Tests/Radio/radio.py --controllers 1 >"$radio_out" </dev/null &
radio_pid=$!
read -r ready port <"$radio_out" || true
[ "${ready:-}" = READY ] && [ -n "${port:-}" ] || fail "the simulated radio did not start"

as_alice sh -c 'mkdir -p ~/.config/baton ~/notes && umask 077 && baton keygen > ~/.config/baton/key' ||
  fail "baton keygen failed"
as_alice sh -c 'sed -e "s|^#controller = bluez$|controller = tcp:127.0.0.1:$1|" \
  -e "s|^#\[folder notes\]$|[folder notes]|" -e "s|^#path = ~/notes$|path = ~/notes|" \
  /usr/share/doc/baton/examples/baton.conf > ~/.config/baton/baton.conf' sh "$port" ||
  fail "cannot copy the example configuration"
for key in "controller = tcp:127.0.0.1:$port" "[folder notes]" "path = ~/notes"; do
  grep -Fqx "$key" "$root/home/alice/.config/baton/baton.conf" ||
    fail "the example configuration has no line '#$key' to uncomment"
done
check=$(as_alice baton check 2>&1) || fail "baton check failed: $check"
grep -q "tcp:127.0.0.1:$port" <<<"$check" || fail "baton check did not show the controller: $check"
grep -q "/home/alice/notes" <<<"$check" || fail "baton check did not show the folder: $check"

# The agent: up once it logs the simulated controller up and answers 'status'
# over its control socket with that controller's address and the folder;
# SIGTERM stops it with exit 0.
agent_log="$scratch/agent.log"
chroot "$root" setpriv --reuid=alice --regid=alice --init-groups \
  env -i HOME=/home/alice USER=alice PATH=/usr/bin:/bin LANG=C.UTF-8 baton agent \
  >"$agent_log" 2>&1 </dev/null &
agent_pid=$!
status=
for _ in $(seq 1 300); do
  kill -0 "$agent_pid" 2>/dev/null || { cat "$agent_log" >&2; agent_pid=; fail "the agent ended (log above)"; }
  if grep -q "controller tcp:127.0.0.1:$port up" "$agent_log" &&
    status=$(as_alice baton status 2>&1) &&
    grep -Eq "^agent: .* \(address ([0-9A-F]{2}:){5}[0-9A-F]{2}\)$" <<<"$status"; then
    break
  fi
  status=
  sleep 0.1
done
[ -n "$status" ] || { cat "$agent_log" >&2; fail "the agent did not start and answer status in 30 s (log above)"; }
grep -Eq "^ +notes +/home/alice/notes +org\.baton\.note$" <<<"$status" ||
  fail "baton status does not show the folder: $status"
printf "%s\n" "$status" >"$scratch/status.txt"
kill -TERM "$agent_pid"
code=0
wait "$agent_pid" || code=$?
agent_pid=
[ "$code" -eq 0 ] || { cat "$agent_log" >&2; fail "the agent exited $code on SIGTERM (log above)"; }
grep -q "stopped$" "$agent_log" || { cat "$agent_log" >&2; fail "the agent did not log 'stopped'"; }
say "agent: started, answered status, stopped on SIGTERM with exit 0"

# --- the installed user unit ------------------------------------------------------
# systemd-analyze verify --user needs the unit's binary and man pages where
# it looks (it cannot take --root with --user), so it runs in the root, with
# systemd and man-db installed after the checks above: minbase has neither.
verifying=$SECONDS
if ! in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd man-db' \
    >"$scratch/apt-systemd.log" 2>&1; then
  tail -n 30 "$scratch/apt-systemd.log" >&2
  fail "apt-get install systemd man-db failed in the root (above)"
fi
unit=/usr/lib/systemd/user/baton.service
verify=$(as_alice sh -c 'mkdir -m 700 /tmp/run-alice && XDG_RUNTIME_DIR=/tmp/run-alice exec systemd-analyze verify --user "$1"' \
  sh "$unit" 2>&1) || fail "systemd-analyze verify --user $unit: $verify"
say "systemd-analyze verify --user $unit: ${verify:-nothing to report} ($((SECONDS - verifying)) s, systemd and man-db installed)"

say "ok ($(basename "$deb") into a clean $suite root, $((SECONDS - start)) s)"
