# A newcomer reaches a closed linked pair in steady state (issue 25: linked
# within 30 s p95; baton(1), Scanning). VM_REACH_SAMPLES times (default 7),
# each on a fresh btvirt (three controllers) and bluetoothd (stock
# main.conf: Privacy off, so every beacon is closed, PROTOCOL.md 3.3): two
# agents on `bluez:hci0` and `bluez:hci1` link, idle past their bursts into
# steady state (20 s after the link is up, plus a random part of a 28 s gap,
# so the newcomer comes at a random point of the pair's windows), then a
# third agent starts on `bluez:hci2` with a fresh state, and the case
# measures from the moment it is up (advertising and scanning) until its
# first link is up (with either member; btvirt cannot give it a second, see
# below); then everything stops. A sample in which both members connected
# to the newcomer at once is lost (neither connection carries anything on
# btvirt) and said so; the case fails only if every sample is lost (two of
# five were in one fresh-clone run: an emulator artifact, not the agent's).
#
# A closed newcomer cannot be connected to, nor can it connect to the pair's
# closed beacons: it is linked only once a pair member hears its asking
# beacon in one of that member's own windows (1.4 s every 28 s ± 2 %), which
# opens a connectable window for it (and asks it to open). On btvirt the
# newcomer's connection to that member fails (the member's second
# connection; see Tests/VM/README.md), so the first link is the one a member
# makes to the newcomer once the newcomer opened for it, often at the next
# member's window. Every sample is printed (`REACH` lines, also on
# the console); the case fails if a first link took over VM_REACH_BOUND s
# (default 60: the 29.96 s from one window's end to the next's, and the
# link's set-up, with margin for an emulator on shared cores: 37.1 s was
# seen once in five samples; the 60 s gaps before allowed 74 s). The target
# (30 s p95) is judged from the printed samples, not by this bound. Every
# wait is on a log line, except the steady periods themselves.
. /cases/lib.sh
have_bluez_backend
samples=${VM_REACH_SAMPLES:-7}
bound=${VM_REACH_BOUND:-60}
# stop_reached PID NAME: SIGTERM. An agent may be connecting then over a
# connection btvirt cannot set up (below): it then exits 1 ("did not stop
# within"), its shutdown bound, which is not this case's subject; a crash
# (or a status above 1) still fails.
stop_reached() {
  kill -TERM "$1" 2>/dev/null || true
  rc=0
  wait "$1" || rc=$?
  [ "$rc" -le 1 ] || { echo "FAILED: agent $2 exited $rc on SIGTERM"; cat "/tmp/$2.log"; exit 1; }
  echo "$(now) agent $2 stopped (status $rc)"
}
# stop_stack: bluetoothd, the system bus and btvirt, and waits until the
# kernel has removed btvirt's adapters.
stop_stack() {
  kill "$BLUEZ_PID" "$DBUS_PID" 2>/dev/null || true
  wait "$BLUEZ_PID" "$DBUS_PID" 2>/dev/null || true
  kill "$BTVIRT_PID" 2>/dev/null || true
  wait "$BTVIRT_PID" 2>/dev/null || true
  i=0
  while [ -e /sys/class/bluetooth/hci0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}
firsts=""
lost=0
n=1
while [ $n -le "$samples" ]; do
  # A fresh stack and pair each time: btvirt gives a controller's second
  # connection the handle of its first (the kernel: "cannot create
  # duplicate filename .../hci2:43"), so the newcomer can hold only one
  # link, the member without one keeps trying, and the connections left
  # broken so spoil the next sample's (measured: sessions that hear
  # nothing, then bluetoothd gone).
  start_btvirt 3
  start_bluez
  wait_powered hci0
  wait_powered hci1
  wait_powered hci2
  start_agent a bluez:hci0
  A=$AGENT_PID
  start_agent b bluez:hci1
  B=$AGENT_PID
  wait_agent_up a
  wait_agent_up b
  wait_log /tmp/a.log "link with .* up \(" 60 || { explain a b; exit 1; }
  wait_log /tmp/b.log "link with .* up \(" 60 || { explain a b; exit 1; }
  [ $n -gt 1 ] || grep -m1 -iE "privacy|closed" /tmp/a.log || true
  # Steady state: the start bursts (10 s) are over, and the newcomer comes
  # at a random point of the pair's windows (a 28 s gap).
  extra=$(awk -v s="$n$$" 'BEGIN {srand(s); printf "%.1f", rand() * 28}')
  echo "$(now) sample $n: pair linked, idle for 20 + $extra s"
  sleep 20
  sleep "$extra"
  still_running $A a
  still_running $B b
  # (Both connecting at once gives two links, and one replaces the other:
  # then this sample started from that drop's burst, which the line shows.)
  grep -E "link with .* down" /tmp/a.log /tmp/b.log || true
  start_agent c bluez:hci2
  C=$AGENT_PID
  shared=$(dmesg | grep -c "failed to register connection device" || true)
  wait_agent_up c 60 || { explain a b c; exit 1; }
  up=$(now)
  if wait_log /tmp/c.log "link with .* up \(" 90; then
    first=$(awk -v a="$up" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}')
    echo "REACH sample $n: first link $first s ($(grep -m1 "link with .* up (" /tmp/c.log))"
    echo "REACH agent-bluez-reach sample $n: first link $first s" >/dev/console
    firsts="$firsts $first"
  elif [ "$(grep -c "l2cap: channel from" /tmp/c.log)" -ge 2 ] ||
    [ "$(dmesg | grep -c "failed to register connection device" || true)" -gt "$shared" ]; then
    # Both members connected to c: on btvirt, two connections of one
    # controller share a handle (above), and neither carries anything; the
    # kernel may say so itself ("kobject_add_internal failed for hci0:N
    # with -EEXIST ... failed to register connection device").
    echo "REACH sample $n: lost (both members connected to c at once; btvirt)"
    echo "REACH agent-bluez-reach sample $n: lost (two connections at once on btvirt)" >/dev/console
    lost=$((lost + 1))
  else
    explain a b c; exit 1
  fi
  stop_reached $C c
  stop_reached $A a
  stop_reached $B b
  stop_stack
  n=$((n + 1))
done
[ "$lost" -lt "$samples" ] || { echo "FAILED: all $samples samples lost"; exit 1; }
summary=$(echo "$firsts" | awk -v lost="$lost" '{
  for (i = 1; i <= NF; i++) { s += $i; if ($i > m) m = $i }
  printf "first link: mean %.1f s, max %.1f s (%d samples, %d lost)", s / NF, m, NF, lost
}')
echo "REACH $summary"
echo "REACH agent-bluez-reach $summary" >/dev/console
worst=$(echo "$firsts" | awk '{ for (i = 1; i <= NF; i++) if ($i > m) m = $i; print m }')
if awk -v w="$worst" -v b="$bound" 'BEGIN {exit !(w > b)}'; then
  echo "FAILED: a newcomer's first link took $worst s, over $bound s"; exit 1
fi
