#!/usr/bin/env bash
# make deb: builds baton_VERSION_amd64.deb in the top directory with Debian's
# own tools, then runs lintian on it (and fails on an error or a warning that
# debian/baton.lintian-overrides does not explain).
#
#   Tests/Scripts/deb.sh
#
# The files are those of 'make install PREFIX=/usr' (the release binary with
# the Swift runtime linked statically and stripped, the user unit with its
# ExecStart rewritten to /usr/bin/baton, the man pages, the bash completion),
# the example configuration in /usr/share/doc/baton/examples, and from debian/
# the copyright and the changelog. dpkg-shlibdeps computes Depends from the
# shared libraries the binary is linked against, dpkg-gencontrol writes
# DEBIAN/control from debian/control and debian/changelog, and dpkg-deb builds
# the package with files owned by root (Rules-Requires-Root: no). The
# version is debian/changelog's; its upstream part must be the binary's.
# Installs dpkg-dev and lintian if missing (as setup.sh does the -dev packages).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
umask 022

fail() { echo "deb: $*" >&2; exit 1; }

"$top/Tests/Scripts/setup.sh" --deb

version=$(dpkg-parsechangelog -S Version)
architecture=$(dpkg-architecture -q DEB_HOST_ARCH)
deb="baton_${version}_${architecture}.deb"
# The package's tree is debian/baton, where dpkg-shlibdeps expects it.
work="$top/.build/deb"
root="$top/debian/baton"
rm -rf "$work" "$root"
mkdir -p "$work" "$root/DEBIAN"

make --no-print-directory install DESTDIR="$root" PREFIX=/usr \
  DOCDIR=/usr/share/doc/baton/examples >&2
binary="$root/usr/bin/baton"
# 'make install' strips the symbols; the compilers' notes go too (as dh_strip).
strip --remove-section=.comment "$binary"

# The Swift runtime is no Debian package: it must be in the binary.
if ldd "$binary" | grep -i -e swift -e 'not found'; then
  fail "$binary needs a library no Debian package provides (above)"
fi
built=$("$binary" --version)
[[ $built == "baton ${version%-*} "* ]] ||
  fail "debian/changelog says ${version%-*}, the binary '$built'"

gzip -9n "$root"/usr/share/man/man1/baton.1 "$root"/usr/share/man/man5/baton.conf.5
doc="$root/usr/share/doc/baton"
install -m 644 debian/copyright "$doc/copyright"
gzip -9n < debian/changelog > "$doc/changelog.Debian.gz"
chmod 644 "$doc/changelog.Debian.gz"
install -d "$root/usr/share/lintian/overrides"
install -m 644 debian/baton.lintian-overrides "$root/usr/share/lintian/overrides/baton"

# dpkg-shlibdeps and dpkg-gencontrol read debian/control from the top directory.
dpkg-shlibdeps -T"$work/substvars" -e"$binary"
dpkg-gencontrol -pbaton -T"$work/substvars" -f"$work/files" -P"$root"
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum > DEBIAN/md5sums)
chmod 644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

rm -f "$top"/baton_*.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$top/$deb" >&2
echo "deb: $deb, $(stat -c %s "$deb") bytes" >&2
echo "deb: $(dpkg-deb -f "$deb" Depends | sed 's/^/Depends: /')" >&2

echo "deb: lintian $deb" >&2
lintian --fail-on error,warning --display-info "$deb" >&2
echo "$top/$deb"
