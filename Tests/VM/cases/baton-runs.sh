# The baton binary and the libraries copied next to it (Swift runtime,
# Foundation, libbluetooth, libsodium, ...) load and run in the guest.
. /cases/lib.sh
baton keygen >/tmp/key
grep -q . /tmp/key
echo "baton keygen in the guest: $(wc -c </tmp/key) bytes"
