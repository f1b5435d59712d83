# BlueZ's bluetoothd (on a system D-Bus) manages the adapter bridged to the
# host's simulated radio. What a BlueZ backend relies on, measured here:
# - bluetoothd powers it; `bluetoothctl show` reports it;
# - a kernel L2CAP LE credit-based socket (l2test: SOCK_SEQPACKET, LE random,
#   PSM 0x0080) connects to the host's bumble peer (peer.py l2cap-server) and
#   exchanges 1000 bytes each way while bluetoothd manages the adapter (done
#   before any discovery: see the README on addresses);
# - a D-Bus advertisement (bluetoothctl, org.bluez.LEAdvertisement1) with 24
#   bytes of manufacturer data for company 0xFFFF goes on air, and a change of
#   ManufacturerData while registered takes effect in place; the host's
#   scanner checks the exact bytes (run.sh: host-hears-bluez-adv*);
# - with Discoverable off, bluetoothd puts Flags 0x04 instead of 0x06 (adv-c);
# - D-Bus discovery (Transport le) hears a host advertisement that is not
#   discoverable (Flags 0x04, manufacturer data); two D-Bus clients discover at once, and btmgmt's own discovery meanwhile
#   (mgmt says Busy: bluetoothd already discovers).
. /cases/lib.sh
peer=$(sed -n 's/.*baton\.peer=\([^ ]*\).*/\1/p' /proc/cmdline)
scanner=$(sed -n 's/.*baton\.scanner=\([^ ]*\).*/\1/p' /proc/cmdline)
quiet=$(sed -n 's/.*baton\.quiet=\([^ ]*\).*/\1/p' /proc/cmdline)
start_bridge
start_bluez
wait_powered "hci$HCI"
bluetoothctl show | sed 's/\x1b\[[0-9;]*m//g' | grep -E "Controller|Powered|ActiveInstances|SupportedInstances"
echo "BLUEZ-GUEST-ADDRESS $(adapter_address "hci$HCI")" >/dev/console

echo "$(now) l2test to $peer, PSM 0x0080"
timeout 15 l2test -y -N 1 -b 1000 -V le_random -P 128 "$peer" >/tmp/l2test.log 2>&1 &
L2=$!
i=0
while [ $i -lt 120 ]; do
  got=$(sed -n 's/.*Received \([0-9]*\) bytes.*/\1/p' /tmp/l2test.log | awk '{s += $1} END {print s + 0}')
  [ "$got" -ge 1000 ] && break
  i=$((i + 1)); sleep 0.1
done
kill $L2 2>/dev/null || true
wait $L2 2>/dev/null || true
grep -v "^0000" /tmp/l2test.log
[ "$got" -ge 1000 ] || { echo "FAILED: l2test received $got of 1000 bytes"; exit 1; }
echo "$(now) L2CAP LE CoC: 1000 bytes each way"
sleep 2  # let the peer close the channel and the link go down

echo "BLUEZ-ADV A $(now)" >/dev/console
hexes() { for b in $1; do printf "0x%s " $b; done; }
a="01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13 14 15 16 17 18"
b="a1 a2 a3 a4 a5 a6 a7 a8 a9 aa ab ac ad ae af b0 b1 b2 b3 b4 b5 b6 b7 b8"
{ sleep 2; echo "advertise.manufacturer 0xffff $(hexes "$a")"; sleep 1; echo "advertise peripheral"
  sleep 4; echo "BLUEZ-ADV B $(now)" >/dev/console
  echo "advertise.manufacturer 0xffff $(hexes "$b")"; sleep 4
  echo "advertise off"; sleep 1
  echo "BLUEZ-ADV C $(now)" >/dev/console
  echo "advertise.discoverable off"; sleep 1; echo "advertise.manufacturer 0xffff $(hexes "$a")"; sleep 1
  echo "advertise peripheral"; sleep 4; echo "advertise off"; sleep 1; echo quit; } | COLUMNS=500 bluetoothctl >/tmp/adv.log 2>&1
sed 's/\x1b\[[0-9;]*m//g' /tmp/adv.log | tr '\r' '\n' | grep -E "registered|Manufacturer|Discoverable|Invalid|Failed"
grep -q "Advertising object registered" /tmp/adv.log || { echo "FAILED: the advertisement was not registered"; exit 1; }
echo "BLUEZ-ADV END $(now)" >/dev/console

echo "$(now) two D-Bus clients discover at once (Transport le)"
timeout 11 bluetoothctl --timeout 8 scan le >/tmp/scan1.log 2>&1 &
S=$!
sleep 2
timeout 7 bluetoothctl --timeout 3 scan le >/tmp/scan2.log 2>&1 || true
timeout 4 btmgmt --index "$HCI" find -l >/tmp/find.log 2>&1 || true
wait $S || true
for f in scan1 scan2; do
  sed 's/\x1b\[[0-9;]*m//g' /tmp/$f.log | grep -E "Discovery|Device ($scanner|$quiet)" | head -3 | sed "s/^/$f: /"
  grep -q "Discovery started" /tmp/$f.log || { echo "FAILED: $f never started"; exit 1; }
done
echo "FACT btmgmt find while bluetoothd discovers: $(head -1 /tmp/find.log | sed 's/\x1b\[[0-9;]*m//g')" | tee /dev/console
grep -q "Device $scanner" /tmp/scan1.log || { echo "FAILED: discovery never saw the discoverable host advertiser $scanner"; exit 1; }
heard() { if grep -q "Device $quiet" "$1"; then echo heard; else echo "not heard"; fi; }
echo "FACT discovery with Transport le only: the non-discoverable advertiser (Flags 0x04) $(heard /tmp/scan1.log)" | tee /dev/console
echo "$(now) discovery with an RSSI filter (-127, Transport le): a filtered discovery"
{ sleep 2; echo "scan.transport le"; sleep 0.5; echo "scan.rssi -127"; sleep 0.5; echo "scan on"; sleep 5; echo "scan off"; sleep 1; echo quit; } \
  | COLUMNS=500 bluetoothctl >/tmp/scan3.log 2>&1
sed 's/\x1b\[[0-9;]*m//g' /tmp/scan3.log | tr '\r' '\n' | grep -E "Discovery|Device ($scanner|$quiet)|Invalid|Failed|rssi|RSSI" | head -8
echo "FACT discovery with an RSSI filter: the non-discoverable advertiser (Flags 0x04) $(heard /tmp/scan3.log)" | tee /dev/console
