# A device the kernel auto-connects to, beside the agent (issue 25): a
# stand-in for a bonded mouse must reconnect as fast with the agent running
# (linked, in its steady state: baton(1), Scanning) as without it.
#
# btvirt's controllers: hci0 is the laptop (bluetoothd, later agent a), hci1
# the peer (agent b), hci2 the mouse: `hci-probe peripheral` holds it
# through the user channel, so bluetoothd never manages it, and it advertises
# on its public address when told, (a) connectable undirected (ADV_IND) and
# (b) directed at hci0's identity address (ADV_DIRECT_IND, low duty cycle:
# what many mice and keyboards send to reconnect). hci0's kernel has the
# mouse as an auto-connect device (`btmgmt add-device -t 1 -a 2`), so it
# connects when it hears the mouse: unless hci0 is discovering, whose scan
# runs from a random address and ignores adverts directed at the public one.
#
# Each sample: the mouse enables advertising, hci0's kernel connects (the
# time from the mouse's enable command sent to its LE Connection Complete,
# on hci2: btvirt delivers both ends' events at once), the mouse answers
# bluetoothd's GATT discovery (an empty server) and disconnects.
# AUTOCONNECT_SAMPLES (10) of each mode, first with bluetoothd alone, then
# with agents a and b linked, the start burst over (`baton status`:
# "windows: off"). A 2 s window could still overlap a sample: each sample
# of the second run is printed with what a's schedule did just before it;
# then one more directed sample as a's next window opens (the worst case).
# FAIL if, for either mode, median(with the agents) > median(without) + 0.5 s.
# Figures go to the console as NOTE-AUTOCONNECT lines (run.sh lists them).
. /cases/lib.sh
have_bluez_backend
samples=${AUTOCONNECT_SAMPLES:-10}
start_btvirt 4
# The mouse (hci2) and hci3 first: bluetoothd powers every adapter it sees,
# and a powered adapter refuses the user channel. hci3 is only there to
# give the mouse a second link while the agents' link is up (hold, in
# hci-probe peripheral: btvirt carries a link's data only when both ends
# have as many other links).
rm -f /tmp/mouse.in /tmp/spare.in
mkfifo /tmp/mouse.in /tmp/spare.in
hci-probe peripheral 2 30 </tmp/mouse.in >/tmp/mouse.out 2>/tmp/mouse.err &
exec 3>/tmp/mouse.in
hci-probe peripheral 3 600 </tmp/spare.in >/tmp/spare.out 2>/tmp/spare.err &
exec 4>/tmp/spare.in
wait_log /tmp/mouse.out "^READY " 15 || { cat /tmp/mouse.err; exit 1; }
wait_log /tmp/spare.out "^READY " 15 || { cat /tmp/spare.err; exit 1; }
mouse=$(sed -n 's/^READY //p' /tmp/mouse.out)
spare=$(sed -n 's/^READY //p' /tmp/spare.out)
echo "$(now) the mouse (hci2) is $mouse, hci3 $spare"
start_btmon
start_bluez
wait_powered hci0
wait_powered hci1
hci0=$(adapter_address hci0)
echo "$(now) hci0 is $hci0"
btmgmt --index 0 add-device -t 1 -a 2 "$mouse" >/tmp/add-device.log 2>&1 || true
cat /tmp/add-device.log
# btmgmt exits 0 either way; a refusal says "Add device failed".
if ! grep -q "^Adding device" /tmp/add-device.log || grep -qi "failed" /tmp/add-device.log; then
  echo "FAILED: btmgmt add-device"; explain; exit 1
fi

# measure RUN MODE [COUNT]: COUNT ($samples) reconnections in MODE
# (undirected, directed); their seconds in /tmp/samples-RUN-MODE, one a
# line. With the agents (RUN other than "none"), each line also says what
# a's schedule did just before.
measure() {
  : >"/tmp/samples-$1-$2"
  k=0
  while [ $k -lt "${3:-$samples}" ]; do
    state=""
    if [ "$1" != none ]; then
      state=$(baton status --socket /tmp/a.sock 2>/dev/null | sed -n 's/^scanning: //p')
      state=" (${state:-no status})"
    fi
    from=$(wc -l </tmp/mouse.out)
    if [ "$2" = directed ]; then echo "directed $hci0" >&3; else echo undirected >&3; fi
    if ! wait_log /tmp/mouse.out "^DISCONNECTED" 40 "$from"; then
      echo "the mouse said:"; cat /tmp/mouse.err
      explain $agents
      exit 1
    fi
    got=$(tail -n +$((from + 1)) /tmp/mouse.out | grep -m1 "^CONNECTED $2 ")
    secs=$(echo "$got" | cut -d' ' -f3)
    peer=$(echo "$got" | cut -d' ' -f4)
    if [ "$peer" != "$hci0" ]; then
      echo "FAILED: the mouse was connected by $peer, not hci0 ($hci0): $got"; exit 1
    fi
    echo "$secs$state" >>"/tmp/samples-$1-$2"
    echo "$(now) $1 $2 sample $((k + 1)): $secs s$state"
    k=$((k + 1))
    # Pacing, not a wait for anything: a run's 20 samples spread over
    # about 35 s.
    sleep 1
  done
}
# median FILE: of the first column.
median() {
  cut -d' ' -f1 "$1" | sort -n | awk '{v[NR] = $1}
    END {if (NR % 2) printf "%.4f", v[(NR + 1) / 2]; else printf "%.4f", (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

echo "$(now) without an agent (bluetoothd only)"
agents=""
# Directed first: a kernel that hears the mouse's undirected advert while
# discovering ends the discovery to connect (and bluetoothd, 5.66, did not
# start it again for an agent that scans all the time), so the directed
# samples would then not meet any discovery.
measure none directed
measure none undirected

# The agents' link will be hci0's second: the mouse's gets one too.
echo undirected >&4
wait_log /tmp/spare.out "^ADVERTISING" 15 || { cat /tmp/spare.err; exit 1; }
echo "hold $spare" >&3
wait_log /tmp/mouse.out "^HELD " 15 || { cat /tmp/mouse.err /tmp/spare.err; exit 1; }
echo "$(now) the mouse holds a link with hci3 (handle $(sed -n 's/^HELD //p' /tmp/mouse.out))"

start_agent a bluez:hci0
A=$AGENT_PID
start_agent b bluez:hci1
B=$AGENT_PID
agents="a b"
wait_agent_up a
wait_agent_up b
wait_log /tmp/a.log "link with .* up \(" 60 || { explain a b; exit 1; }
wait_log /tmp/b.log "link with .* up \(" 60 || { explain a b; exit 1; }
echo "$(now) linked: $(grep -m1 "link with .* up (" /tmp/a.log)"
la=$(wc -l </tmp/a.log)
# The steady state: a's start burst over, no window open (with
# VM_SCANNING=continuous, for bench-bluez.sh: scanning all the time).
steady_state="^scanning: (windows: off|continuous)"
i=0
while [ $i -lt 600 ]; do
  baton status --socket /tmp/a.sock 2>/dev/null | grep -qE "$steady_state" && break
  i=$((i + 1))
  sleep 0.1
done
baton status --socket /tmp/a.sock >/tmp/a.status 2>&1 || true
grep -qE "$steady_state" /tmp/a.status || {
  echo "FAILED: agent a's schedule never said \"windows: off\" within 60 s of the link:"
  cat /tmp/a.status; explain a b; exit 1
}
echo "$(now) agent a in its steady state: $(grep "^scanning:" /tmp/a.status)"
lm=$(wc -l </tmp/a.log)
measure agent directed
measure agent undirected
# The samples above fall between two windows (the first comes 48 to 72 s
# after the burst): one more directed reconnection as a window opens, the
# schedule's worst case (reported, not judged).
if [ "${VM_SCANNING:-}" = continuous ]; then
  # Scanning all the time: no window opens.
  echo "none (scanning = continuous)" >/tmp/samples-window-directed
else
  lw=$(wc -l </tmp/a.log)
  wait_log /tmp/a.log "scan schedule: window" 90 "$lw" || { explain a b; exit 1; }
  measure window directed 1
fi
still_running $A a
still_running $B b
if tail -n +$((la + 1)) /tmp/a.log | grep -E "link with .* down"; then
  echo "FAILED: a link went down while measuring (its burst is not the steady state)"
  explain a b; exit 1
fi
windows=$(tail -n +$((lm + 1)) /tmp/a.log | grep -c "scan schedule: window" || true)
stop_agent $A a
stop_agent $B b
# (The mouse's input stays open in every child started after it: it ends
# with the case.)
exec 3>&- 4>&-

failed=0
for mode in directed undirected; do
  without=$(median "/tmp/samples-none-$mode")
  with=$(median "/tmp/samples-agent-$mode")
  line="$mode: median without an agent $without s, with two linked agents $with s (median of $samples)"
  echo "$line"
  echo "NOTE-AUTOCONNECT $line" >/dev/console
  echo "NOTE-AUTOCONNECT $mode samples without: $(cut -d' ' -f1 "/tmp/samples-none-$mode" | paste -sd ' ')" >/dev/console
  echo "NOTE-AUTOCONNECT $mode samples with (a's schedule just before): $(paste -sd ',' "/tmp/samples-agent-$mode" | sed 's/,/, /g')" >/dev/console
  if awk -v a="$with" -v b="$without" 'BEGIN {exit !(a > b + 0.5)}'; then
    echo "FAILED: $mode: with the agents the mouse connects over 0.5 s later (median $with s against $without s)"
    failed=1
  fi
done
echo "NOTE-AUTOCONNECT directed, as a scan window of agent a opened: $(cat /tmp/samples-window-directed)" >/dev/console
echo "NOTE-AUTOCONNECT agent a opened $windows scan windows while the agents' samples were taken (the one above included)" >/dev/console
echo "agent a opened $windows scan windows meanwhile"
[ $failed = 0 ]
