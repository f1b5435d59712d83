#!/usr/bin/env bash
# Fetches Debian's kernel (the package linux-image-amd64 depends on), and
# caches under Tests/VM/cache/kernel/<package>_<version>/:
#   vmlinux          the uncompressed kernel, which qemu boots through its PVH entry
#   lib/modules/V/   only the modules the VM needs (and what they depend on), depmod'ed
# Prints that folder's path. Quick when the cache is there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache="$here/cache/kernel"

# (In this order: init loads them so. The kernel's default random number
# generator, drbg, comes before bluetooth: without it
# the ECDH self-test fails ("alg: ecdh-nist-p256: test failed on vector 2",
# the vector whose key is generated), so SMP is off and the kernel cannot
# make a resolvable private address for bluetoothd's Privacy.)
modules=(sha512_generic ctr drbg bluetooth hci_vhci ecdh_generic ecc rfkill
  crc16 af_alg algif_hash algif_skcipher cmac ecb virtio virtio_ring virtio_pci
  virtio_pci_modern_dev virtio_pci_legacy_dev virtio_console)

package=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ && !found {print $2; found = 1}')
if [ -z "$package" ]; then
  apt-get update -qq >&2
  package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ && !found {print $2; found = 1}')
fi
version=$(apt-cache policy "$package" | awk '/Candidate:/ {print $2}')
dir="$cache/${package}_$version"
# (Extracted again when the list of modules changed.)
if [ -f "$dir/.done" ] && [ "$(cat "$dir/modules")" = "$(printf '%s\n' "${modules[@]}")" ]; then
  echo "$dir"
  exit 0
fi

echo "vm: fetching and extracting $package $version (once; cached in $dir)" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
(cd "$work" && apt-get download -q "$package=$version" >/dev/null 2>&1) || {
  apt-get update -qq >&2
  (cd "$work" && apt-get download -q "$package=$version" >/dev/null)
}
mkdir "$work/x"
dpkg-deb --fsys-tarfile "$work"/*.deb | tar -x -C "$work/x" --wildcards './boot/vmlinuz-*' './lib/modules/*'
kver=$(ls "$work/x/lib/modules")
depmod -b "$work/x" "$kver"

rm -rf "$dir"
mkdir -p "$dir/lib/modules/$kver"
python3 "$here/extract-vmlinux.py" "$work"/x/boot/vmlinuz-* "$dir/vmlinux"
for m in "${modules[@]}"; do
  modprobe -d "$work/x" -S "$kver" --show-depends "$m"
done | awk '$1 == "insmod" {print $2}' | sort -u | while read -r ko; do
  rel=${ko#"$work/x/lib/modules/$kver/"}
  mkdir -p "$dir/lib/modules/$kver/$(dirname "$rel")"
  cp "$ko" "$dir/lib/modules/$kver/$rel"
done
cp "$work/x/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$dir/lib/modules/$kver/"
depmod -b "$dir" "$kver"
printf '%s\n' "${modules[@]}" >"$dir/modules"
echo "$kver" >"$dir/kernel-version"
touch "$dir/.done"
echo "$dir"
