#!/usr/bin/env bash
# The Debian package, from the outside: builds it with 'make deb' (which runs
# lintian), unpacks it into a fresh root with dpkg -x, and checks what it
# holds: Depends computed from the linked libraries, the binary (no Swift
# library needed, --version, 'check' from the unpacked files), the unit's
# ExecStart, the man pages, the completion and the documentation.
# Fails at the first check that does not hold. Part of 'make test'.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
start=$SECONDS

fail() { echo "test-deb: FAIL: $*" >&2; exit 1; }

deb=$(Tests/Scripts/deb.sh | tail -n 1)
[ -f "$deb" ] || fail "make deb made no package"
[[ $(basename "$deb") == baton_$(dpkg-parsechangelog -S Version)_amd64.deb ]] ||
  fail "package named $(basename "$deb")"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
root="$scratch/root"
dpkg-deb -x "$deb" "$root"
baton="$root/usr/bin/baton"

# Depends: each library the binary links, libsystemd0 (opened by dlopen) and
# procps (/bin/kill, the unit's ExecReload).
depends=$(dpkg-deb -f "$deb" Depends)
for library in libc6 libsodium23 libbluetooth3 libinih1 libsqlite3-0 libsystemd0 procps; do
  [[ ", $depends," == *", $library"[\ ,]* ]] || fail "Depends lacks $library: $depends"
done
[[ $depends != *swift* ]] || fail "Depends names a Swift package: $depends"

# The binary: no library outside Debian's, the versions, a configuration check.
libraries=$(ldd "$baton")
if grep -q -i -e swift -e 'not found' <<<"$libraries"; then
  fail "baton needs $libraries"
fi
version=$("$baton" --version)
upstream=$(dpkg-parsechangelog -S Version)
upstream=${upstream%-*}
[[ $version =~ ^baton\ $upstream\ \(handoff\ protocol\ [0-9]+\)$ ]] ||
  fail "baton --version printed '$version'"

home="$scratch/home"
mkdir -p "$home/notes" "$home/.config/baton"
"$baton" keygen > "$home/.config/baton/key"
chmod 600 "$home/.config/baton/key"
check=$(env -i HOME="$home" PATH=/usr/bin:/bin XDG_RUNTIME_DIR="$scratch" \
  "$baton" check --notes "$home/notes" --controller tcp:127.0.0.1:1 2>&1) ||
  fail "baton check failed: $check"
grep -q "tcp:127.0.0.1:1" <<<"$check" || fail "baton check did not show the controller: $check"
if env -i HOME="$home" PATH=/usr/bin:/bin "$baton" check --notes "$scratch/absent" \
  --controller tcp:127.0.0.1:1 >/dev/null 2>&1; then
  fail "baton check accepted a notes folder that does not exist"
fi

# The unit runs the installed binary.
unit="$root/usr/lib/systemd/user/baton.service"
grep -qx 'ExecStart=/usr/bin/baton agent' "$unit" || fail "unit's $(grep ExecStart= "$unit")"
! grep -q /usr/local "$unit" || fail "unit still names /usr/local: $(grep /usr/local "$unit")"

# Man pages, completion, documentation.
for page in man1/baton.1.gz man5/baton.conf.5.gz; do
  gzip -t "$root/usr/share/man/$page" || fail "$page is not gzipped"
done
completion="$root/usr/share/bash-completion/completions/baton"
offered=$(bash -c '. "$1"; complete -p baton >/dev/null || exit 1
  COMP_WORDS=(baton p); COMP_CWORD=1; _baton; echo "${COMPREPLY[*]}"' bash "$completion") ||
  fail "the completion does not register itself"
[ "$offered" = pair ] || fail "completing 'baton p' offered '$offered'"
doc="$root/usr/share/doc/baton"
cmp -s "$doc/examples/baton.conf" Config/baton.conf || fail "examples/baton.conf is not Config/baton.conf"
head -n 1 "$doc/copyright" | grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
  fail "copyright is not machine-readable"
zcat "$doc/changelog.Debian.gz" | cmp -s - debian/changelog || fail "changelog.Debian.gz"

echo "test-deb: ok ($(basename "$deb"), $(stat -c %s "$deb") bytes, $((SECONDS - start)) s)"
