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
kill $BTVIRT_PID
