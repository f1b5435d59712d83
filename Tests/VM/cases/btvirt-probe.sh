# BlueZ's controller emulator (btvirt -l2: hci0 and hci1 on their own radio)
# through baton's user channel transport: hci1 advertises, hci0 hears it.
. /cases/lib.sh
start_btvirt
hci-probe list
hci-probe advertise 1 12 baton-btvirt &
ADV=$!
sleep 0.5
hci-probe scan 0 8 baton-btvirt
kill $ADV 2>/dev/null || true
# close() wakes a receive() blocked on another thread, and frees the adapter.
hci-probe close-wakes 0
hci-probe open 0
# An adapter that goes away (btvirt ends: like a dongle unplugged) ends a
# blocked receive() with nil, not an error or a hang.
hci-probe until-gone 1 >/tmp/gone.log 2>&1 &
GONE=$!
# Wait until it holds hci1 (a fixed 0.5 s was too short on a loaded machine:
# btvirt was killed before the probe opened hci1).
i=0
while ! grep -q "user channel open" /tmp/gone.log && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.2
kill $BTVIRT_PID
i=0
while kill -0 $GONE 2>/dev/null && [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
cat /tmp/gone.log
wait $GONE
grep -q "receive() returned nil: adapter gone" /tmp/gone.log
