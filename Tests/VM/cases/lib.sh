# Helpers for the guest cases (sourced by each case; run under `sh -e`).

# Seconds since boot, for the log.
now() { cut -d' ' -f1 /proc/uptime; }

# start_btvirt [N]: BlueZ's controller emulator with N controllers (default
# 2: hci0, hci1 on a little radio of their own); waits until each can be opened.
start_btvirt() {
  btvirt -l${1:-2} >/tmp/btvirt.log 2>&1 &
  BTVIRT_PID=$!
  btvirt_n=0
  while [ $btvirt_n -lt ${1:-2} ]; do wait_ready $btvirt_n; btvirt_n=$((btvirt_n + 1)); done
}

# Waits until adapter N exists and the kernel has finished setting it up:
# the user channel then opens (the probe resets it and closes again).
wait_ready() {
  i=0
  while [ $i -lt 100 ]; do
    if [ -e "/sys/class/bluetooth/hci$1" ] && hci-probe open "$1" >/tmp/ready.log 2>&1; then
      echo "$(now) hci$1 ready: $(cat /tmp/ready.log)"
      return 0
    fi
    i=$((i + 1))
    sleep 0.1
  done
  echo "hci$1 never became ready:"; cat /tmp/ready.log
  return 1
}

# Starts the vhci <-> virtio-serial bridge; sets HCI to the new adapter's index.
start_bridge() {
  rm -f /run/vhci-index
  vhci-bridge /dev/vport0p1 /run/vhci-index 2>/tmp/bridge.log &
  BRIDGE_PID=$!
  i=0
  while [ ! -s /run/vhci-index ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  [ -s /run/vhci-index ] || { echo "bridge never created an adapter"; cat /tmp/bridge.log; return 1; }
  HCI=$(cat /run/vhci-index)
  echo "$(now) bridge: $(cat /tmp/bridge.log)"
  wait_ready "$HCI"
}

# expect_failure "description" PHRASE... -- COMMAND...
# Runs COMMAND, which must exit non-zero without crashing (status below 128)
# and print every PHRASE on stderr or stdout.
expect_failure() {
  what=$1; shift
  phrases=""
  while [ "$1" != "--" ]; do phrases="$phrases
$1"; shift; done
  shift
  set +e
  "$@" >/tmp/out.log 2>&1
  rc=$?
  set -e
  echo "$what: exit status $rc; output:"; cat /tmp/out.log
  [ "$rc" -ne 0 ] || { echo "FAILED: $what: exited 0"; return 1; }
  [ "$rc" -ne 124 ] && [ "$rc" -ne 143 ] || { echo "FAILED: $what: still running after 20 s (it should exit with the error)"; return 1; }
  [ "$rc" -lt 128 ] || { echo "FAILED: $what: crashed (status $rc)"; return 1; }
  echo "$phrases" | while IFS= read -r p; do
    [ -z "$p" ] && continue
    grep -qF -- "$p" /tmp/out.log || { echo "FAILED: $what: missing \"$p\""; exit 1; }
  done
}

# Whether this image holds a baton with the agent command.
have_agent() { [ -x /usr/bin/baton ] && [ -f /etc/baton-has-agent ]; }

# agent_args SPEC DIR NAME: the agent's arguments for notes folder DIR on
# controller SPEC (key file $KEY, default /etc/baton.key).
agent_args() {
  echo "agent --controller $1 --notes $2 --key-file ${KEY:-/etc/baton.key} --name $3" \
    "--state-dir $2.state --socket $2.sock"
}

# start_agent NAME SPEC [ARGS...]: a baton agent on controller SPEC with notes
# in /tmp/NAME (log /tmp/NAME.log); sets AGENT_PID.
# With VM_SCANNING (from run.sh), the agent runs with `scanning =
# $VM_SCANNING` (baton.conf(5)): Tests/Scripts/bench-bluez.sh compares
# `continuous`, the agent before its scan schedule, with the default.
start_agent() {
  name=$1 spec=$2; shift 2
  # A fresh folder and state: an earlier case of this boot may have used the name.
  rm -rf "/tmp/$name" "/tmp/$name.state" "/tmp/$name.sock" "/tmp/$name.conf"
  mkdir -p "/tmp/$name"
  if [ -n "${VM_SCANNING:-}" ]; then
    printf '[agent]\nscanning = %s\n' "$VM_SCANNING" >"/tmp/$name.conf"
    set -- --config "/tmp/$name.conf" "$@"
  fi
  baton $(agent_args "$spec" "/tmp/$name" "$name") --verbose "$@" \
    >"/tmp/$name.log" 2>&1 &
  AGENT_PID=$!
  echo "$(now) agent $name on $spec: pid $AGENT_PID"
}

# wait_log FILE PATTERN SECONDS [FROM_LINE]: a line matching the extended
# regular expression PATTERN appears in FILE (after line FROM_LINE).
wait_log() {
  i=0
  while [ $i -lt $(($3 * 10)) ]; do
    tail -n +$((${4:-0} + 1)) "$1" 2>/dev/null | grep -qE -- "$2" && return 0
    i=$((i + 1))
    sleep 0.1
  done
  echo "FAILED: no line matching \"$2\" in $1 within $3 s"; tail -40 "$1"; return 1
}

# wait_agent_up NAME [SECONDS]: agent NAME (log /tmp/NAME.log, or $LOG) is
# advertising, scanning and listening.
wait_agent_up() {
  wait_log "${LOG:-/tmp/$1.log}" "advertising as .* and scanning" "${2:-30}" || return 1
  echo "$(now) agent $1 is up"
}

# wait_for_note FILE EXPECTED SECONDS: FILE appears byte-identical to EXPECTED.
wait_for_note() {
  i=0
  while [ $i -lt $(($3 * 10)) ]; do
    if [ -f "$1" ] && cmp -s "$1" "$2"; then
      echo "$(now) $1 arrived, byte-identical ($(sha256sum <"$1" | cut -c1-16))"
      if [ -n "${SAVED_AT:-}" ]; then
        latency="$(basename "$1") $(awk -v a="$SAVED_AT" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}') s from save to arrival"
        echo "latency: $latency"
        echo "NOTE-LATENCY ${CASE_NAME:-?} $latency" >/dev/console
      fi
      SAVED_AT=
      return 0
    fi
    i=$((i + 1))
    sleep 0.1
  done
  echo "FAILED: $1 did not arrive byte-identical within $3 s"
  [ -f "$1" ] && { echo "it holds:"; od -c "$1" | head; }
  return 1
}

# still_running PID NAME: the agent has not exited (or crashed).
still_running() {
  kill -0 "$1" 2>/dev/null && return 0
  rc=0
  wait "$1" || rc=$?  # (under sh -e a bare failing wait would end the case silently)
  echo "FAILED: agent $2 exited with status $rc"; cat "/tmp/$2.log"; return 1
}

# dump_btsnoop FILE: the file, base64, between markers, for the host to decode with btmon.
dump_btsnoop() {
  echo "BTSNOOP-BEGIN $(basename "$1")" >/dev/console
  base64 "$1" >/dev/console
  echo "BTSNOOP-END" >/dev/console
}

# --- the system's Bluetooth stack: a system D-Bus and BlueZ's bluetoothd ------

# start_bluez [restricted]: the system bus (Debian's system.conf and BlueZ's
# bluetooth.conf policy; "restricted" drops its default-context rule, so only
# root and the bluetooth group may talk to org.bluez), then bluetoothd (-n, its
# log in /tmp/bluetoothd.log). Waits until bluetoothd owns org.bluez. Start
# btvirt or the bridge first: their readiness check opens the user channel,
# which bluetoothd's powered adapter would refuse. Sets DBUS_PID, BLUEZ_PID.
start_bluez() {
  # main.conf as Debian ships it (/etc/bluetooth/main.conf.stock), or with
  # `Privacy = $BLUEZ_PRIVACY` under [General]: a case that sets it leaves
  # no trace for the next one.
  if [ -n "${BLUEZ_PRIVACY:-}" ]; then
    awk -v p="$BLUEZ_PRIVACY" '{print} $0 == "[General]" {print "Privacy = " p}' \
      /etc/bluetooth/main.conf.stock >/etc/bluetooth/main.conf
  else
    cp /etc/bluetooth/main.conf.stock /etc/bluetooth/main.conf
  fi
  if [ "${1:-}" = restricted ]; then
    sed '/<policy context="default">/,/<\/policy>/d' /etc/bluetooth.conf.debian \
      >/etc/dbus-1/system.d/bluetooth.conf
  else
    cp /etc/bluetooth.conf.debian /etc/dbus-1/system.d/bluetooth.conf
  fi
  mkdir -p /run/dbus /var/lib/bluetooth
  : >/tmp/bluetoothd.log  # this case's bluetoothd only (restarts append)
  chown messagebus:messagebus /run/dbus
  chmod 700 /var/lib/bluetooth
  rm -f /run/dbus/system_bus_socket /run/dbus/pid
  dbus-daemon --system --nofork --nopidfile --nosyslog >/tmp/dbus.log 2>&1 &
  DBUS_PID=$!
  i=0
  while [ ! -S /run/dbus/system_bus_socket ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  [ -S /run/dbus/system_bus_socket ] || { echo "FAILED: the system bus never came up"; cat /tmp/dbus.log; return 1; }
  echo "$(now) system bus up (dbus-daemon pid $DBUS_PID)"
  start_bluetoothd
}

# start_bluetoothd: bluetoothd in the foreground; waits until it owns org.bluez.
# Sets BLUEZ_PID.
start_bluetoothd() {
  /usr/libexec/bluetooth/bluetoothd -n ${BLUETOOTHD_ARGS:-} >>/tmp/bluetoothd.log 2>&1 &
  BLUEZ_PID=$!
  i=0
  while [ $i -lt 150 ]; do
    if dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner string:org.bluez 2>/dev/null | grep -q "boolean true"; then
      echo "$(now) bluetoothd (pid $BLUEZ_PID) owns org.bluez"
      return 0
    fi
    kill -0 $BLUEZ_PID 2>/dev/null || break
    i=$((i + 1))
    sleep 0.1
  done
  echo "FAILED: bluetoothd never took org.bluez"; cat /tmp/bluetoothd.log; return 1
}

# wait_powered hciN [SECONDS]: bluetoothd reports the adapter powered.
wait_powered() {
  i=0
  while [ $i -lt $((${2:-15} * 10)) ]; do
    if bluetoothctl show "$(adapter_address "$1")" 2>/dev/null | grep -q "Powered: yes"; then
      echo "$(now) $1 powered by bluetoothd"
      return 0
    fi
    i=$((i + 1))
    sleep 0.1
  done
  echo "FAILED: bluetoothd never powered $1"; bluetoothctl list; tail -30 /tmp/bluetoothd.log; return 1
}

# adapter_address hciN: the adapter's address as bluetoothd reports it.
adapter_address() {
  dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" \
    org.freedesktop.DBus.Properties.Get string:org.bluez.Adapter1 string:Address 2>/dev/null \
    | sed -n 's/.*string "\(.*\)".*/\1/p'
}

# Whether this image's baton has the BlueZ backend (`controller = bluez`).
have_bluez_backend() { [ -f /etc/baton-has-bluez ]; }

# save_note SOURCE DEST: copies SOURCE to DEST and notes the time, so the next
# wait_for_note reports the time from this save to the peer's file.
save_note() { SAVED_AT=$(now); cp "$1" "$2"; }

# has_phrases FILE PHRASES: FILE holds every line of PHRASES (case-insensitive).
has_phrases() {
  echo "$2" | while IFS= read -r p; do
    [ -z "$p" ] && continue
    grep -qiF -- "$p" "$1" || exit 1
  done
}

# expect_message WHAT SECONDS PHRASE... -- COMMAND...: COMMAND either exits
# non-zero (no crash), or is still running once its output holds every PHRASE
# (a backend may exit on the fault or wait it out); at most SECONDS.
expect_message() {
  what=$1 secs=$2; shift 2
  phrases=""
  while [ "$1" != "--" ]; do phrases="$phrases
$1"; shift; done
  shift
  "$@" >/tmp/msg.log 2>&1 &
  pid=$!
  i=0
  # Until it exits, or (still running) has said every phrase.
  while kill -0 $pid 2>/dev/null && [ $i -lt $((secs * 10)) ]; do
    has_phrases /tmp/msg.log "$phrases" && break
    sleep 0.1; i=$((i + 1))
  done
  if kill -0 $pid 2>/dev/null; then
    kill -TERM $pid; wait $pid 2>/dev/null || true
    echo "$what: still running after $(awk -v i=$i 'BEGIN {print i / 10}') s (waiting it out); output:"
  else
    set +e; wait $pid; rc=$?; set -e
    echo "$what: exit status $rc; output:"
    [ "$rc" -ne 0 ] || { cat /tmp/msg.log; echo "FAILED: $what: exited 0"; return 1; }
    [ "$rc" -lt 128 ] || { cat /tmp/msg.log; echo "FAILED: $what: crashed (status $rc)"; return 1; }
  fi
  cat /tmp/msg.log
  echo "$phrases" | while IFS= read -r p; do
    [ -z "$p" ] && continue
    grep -qiF -- "$p" /tmp/msg.log || { echo "FAILED: $what: missing \"$p\""; exit 1; }
  done
}

# start_btmon: records every adapter's HCI traffic and bluetoothd's mgmt
# commands to /tmp/hci.btsnoop (run before bluetoothd); `explain` sends it to
# the host, which decodes it (btsnoop-hci; with VM_KEEP=1 the text is kept).
start_btmon() {
  rm -f /tmp/hci.btsnoop
  btmon -w /tmp/hci.btsnoop >/dev/null 2>&1 &
  BTMON_PID=$!
}

# explain NAME...: after a failure, the logs of agents NAME (/tmp/NAME.log),
# bluetoothd's last lines, and the HCI log if start_btmon ran.
explain() {
  for n in "$@"; do echo "----- agent $n -----"; cat "/tmp/$n.log"; done
  echo "----- bluetoothd (last lines) -----"
  grep -v "^$" /tmp/bluetoothd.log 2>/dev/null | tail -60
  if [ -f /tmp/hci.btsnoop ]; then
    # btmon buffers its writes: stop it so the file is complete.
    kill "${BTMON_PID:-}" 2>/dev/null && wait "$BTMON_PID" 2>/dev/null
    dump_btsnoop /tmp/hci.btsnoop
  fi
  return 0
}

# stop_agent PID NAME: SIGTERM; the agent must exit with status 0 within 20 s.
stop_agent() {
  kill -TERM "$1" 2>/dev/null || true
  i=0
  while kill -0 "$1" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 "$1" 2>/dev/null; then
    echo "FAILED: agent $2 still running 20 s after SIGTERM"; cat "/tmp/$2.log"; return 1
  fi
  rc=0
  wait "$1" || rc=$?
  [ "$rc" -eq 0 ] || { echo "FAILED: agent $2 exited $rc on SIGTERM"; cat "/tmp/$2.log"; return 1; }
  echo "$(now) agent $2 stopped"
}

# --- a systemd user manager for user baton (the agent-unit cases) -----------

UNIT_HOME=/home/baton

# as_baton COMMAND: a shell command as user baton, in its user manager's
# environment (systemctl --user finds the manager through XDG_RUNTIME_DIR).
as_baton() {
  su -s /bin/sh baton -c "export HOME=$UNIT_HOME XDG_RUNTIME_DIR=$UNIT_RUN SYSTEMD_PAGER=cat SYSTEMD_COLORS=0 LD_LIBRARY_PATH=$LD_LIBRARY_PATH; $1"
}

# start_user_manager: `systemd --user` for user baton (Debian's systemd 252),
# in what a booted system gives it. Waits until it is running; sets MGR (its
# pid) and UNIT_RUN (its XDG_RUNTIME_DIR). It logs to the kernel's log
# (dmesg): there is no journald, and on the console it would reopen
# /dev/console, which is root's.
start_user_manager() {
  [ -x /lib/systemd/systemd ] || { echo "FAILED: no /lib/systemd/systemd in the image"; return 1; }
  uid=$(id -u baton)
  UNIT_RUN=/run/user/$uid
  # cgroup2, and a subtree of it for the manager, owned by baton (as
  # systemd-logind and user@.service set it up), with the files that
  # delegation hands over.
  mkdir -p /sys/fs/cgroup
  grep -q " /sys/fs/cgroup cgroup2 " /proc/mounts || mount -t cgroup2 cgroup2 /sys/fs/cgroup
  cg=/sys/fs/cgroup/user.slice/user-$uid.slice/user@$uid.service
  mkdir -p "$cg"
  chown -R baton:baton "$cg"
  for f in cgroup.procs cgroup.subtree_control cgroup.threads; do chown baton:baton "$cg/$f"; done
  # What PID 1 leaves in /run/systemd: system/ (sd_booted(3): a user manager
  # refuses to start without it) and unit-root/ (where a unit's mount
  # namespace is put together; a user manager cannot create it).
  mkdir -p "$UNIT_RUN" /run/systemd/system /run/systemd/unit-root
  chmod 400 /run/systemd/unit-root
  chown baton:baton "$UNIT_RUN"
  chmod 700 "$UNIT_RUN"
  # /dev/pts and /dev/shm as on a real system (PrivateDevices= binds them
  # into the unit's /dev).
  mkdir -p /dev/pts /dev/shm
  grep -q " /dev/pts devpts " /proc/mounts || mount -t devpts devpts /dev/pts
  grep -q " /dev/shm tmpfs " /proc/mounts || mount -t tmpfs -o mode=1777 tmpfs /dev/shm
  # /run a mount point of its own, as on a real system: else the unit's
  # mount namespace (MountAPIVFS=, which PrivateDevices= and the like imply)
  # puts an empty tmpfs there, hiding the bus socket and XDG_RUNTIME_DIR. A
  # bind mount of itself keeps what it holds for the cases after this one.
  grep -q " /run " /proc/mounts || mount -o bind /run /run
  # /tmp and /var/tmp as on a real system (PrivateTmp= makes the unit's there).
  chmod 1777 /tmp /var/tmp
  chmod o+w /dev/kmsg
  echo on >/proc/sys/kernel/printk_devkmsg  # not rate-limited
  # Moved into its cgroup first (as root: the move needs write access to the
  # common parent).
  sh -c "echo \$\$ >$cg/cgroup.procs; exec su -s /bin/sh baton -c 'export HOME=$UNIT_HOME XDG_RUNTIME_DIR=$UNIT_RUN LD_LIBRARY_PATH=$LD_LIBRARY_PATH; exec /lib/systemd/systemd --user --log-target=kmsg'" \
    >/tmp/systemd-user.log 2>&1 &
  MGR=$!
  i=0 state=
  while [ $i -lt 300 ]; do
    { [ -S "$UNIT_RUN/systemd/private" ] && as_baton "systemctl --user is-system-running" >/tmp/state.log 2>&1; } || true
    state=$(cat /tmp/state.log 2>/dev/null || true)
    case $state in running|degraded) break ;; esac
    kill -0 $MGR 2>/dev/null || { echo "FAILED: systemd --user exited"; cat /tmp/systemd-user.log; return 1; }
    i=$((i + 1)); sleep 0.1
  done
  case $state in running|degraded) ;; *) echo "FAILED: the user manager never came up ($state)"; dmesg | tail -30; return 1 ;; esac
  echo "$(now) systemd --user (pid $MGR) is $state"
}

# install_unit CONTROLLER [DROP-IN]: the unit from the tree
# (/cases/data/baton.service), its ExecStart rewritten to the guest's baton
# ($UNIT_BIN, default /usr/bin/baton) as `make install` does, plus a drop-in
# for what the harness needs (the agent's log in ~/agent.log: there is no
# journal) and the file DROP-IN if given; baton.conf with CONTROLLER and the
# folder ~/notes (and the lines $UNIT_FOLDER_KEYS in its section), the key.
# Fresh each time.
install_unit() {
  d=$UNIT_HOME/.config/systemd/user
  rm -rf "$UNIT_HOME/.config" "$UNIT_HOME/notes" "$UNIT_HOME/.local" "$UNIT_HOME/agent.log"
  mkdir -p "$d/baton.service.d" "$UNIT_HOME/.config/baton" "$UNIT_HOME/notes"
  sed "s|^ExecStart=/usr/local/bin/baton |ExecStart=${UNIT_BIN:-/usr/bin/baton} |" /cases/data/baton.service \
    >"$d/baton.service"
  grep -qx "ExecStart=${UNIT_BIN:-/usr/bin/baton} agent" "$d/baton.service" \
    || { echo "FAILED: ExecStart not rewritten"; grep ExecStart "$d/baton.service"; return 1; }
  printf '[Service]\nStandardOutput=append:%s/agent.log\nStandardError=inherit\n' "$UNIT_HOME" \
    >"$d/baton.service.d/harness.conf"
  [ -z "${2:-}" ] || cp "$2" "$d/baton.service.d/route.conf"
  printf '[agent]\ncontroller = %s\nname = unit\n\n[folder notes]\npath = ~/notes\n%s' "$1" \
    "${UNIT_FOLDER_KEYS:-}" >"$UNIT_HOME/.config/baton/baton.conf"
  cp /etc/baton.key "$UNIT_HOME/.config/baton/key"
  chown -R baton:baton "$UNIT_HOME"
  chmod 600 "$UNIT_HOME/.config/baton/key"
  as_baton "systemctl --user daemon-reload"
}

# unit_explain: after a failure, the unit's status, the agent's log and the
# user manager's last lines.
unit_explain() {
  as_baton "systemctl --user status baton" || true
  as_baton "systemctl --user show -p Result -p ExecMainCode -p ExecMainStatus baton" || true
  echo "----- agent (unit) -----"; cat "$UNIT_HOME/agent.log" 2>/dev/null || true
  echo "----- systemd --user (last lines) -----"
  dmesg >/tmp/dmesg.log || true
  grep "systemd\[$MGR\]" /tmp/dmesg.log | tail -n 40 || true
}

# unit_status_field FIELD: FIELD's value in the unit's agent's /proc/PID/status.
unit_status_field() {
  pid=$(as_baton "systemctl --user show -p MainPID --value baton")
  awk -v f="$1:" '$1 == f {print $2}' "/proc/$pid/status"
}

# stop_unit: `systemctl --user stop baton`; the agent must have exited 0
# (Result=success, status 0) and the manager logged the stop.
stop_unit() {
  pid=$(as_baton "systemctl --user show -p MainPID --value baton")
  as_baton "systemctl --user stop baton"
  state=$(as_baton "systemctl --user is-active baton" || true)
  show=$(as_baton "systemctl --user show -p Result -p ExecMainCode -p ExecMainStatus baton" | tr '\n' ' ')
  echo "$(now) after stop: $state; $show"
  [ "$state" = inactive ] || { echo "FAILED: the unit is $state after stop"; unit_explain; return 1; }
  for want in Result=success ExecMainCode=1 ExecMainStatus=0; do
    case " $show" in *" $want "*) ;; *) echo "FAILED: the agent did not exit cleanly (no $want)"; unit_explain; return 1 ;; esac
  done
  ! kill -0 "$pid" 2>/dev/null || { echo "FAILED: the agent still runs after stop"; return 1; }
  dmesg | grep "systemd\[$MGR\]: Stopped baton.service" >/tmp/stopped.log \
    || { echo "FAILED: the user manager did not log the unit's stop"; unit_explain; return 1; }
  tail -1 /tmp/stopped.log
}

# wait_steady NAME: agent NAME's scan schedule is in its steady state (its
# start burst over, no window open; or scanning all the time, with
# VM_SCANNING=continuous), by `baton status` on /tmp/NAME.sock, within 60 s;
# 1 if not (the caller measures anyway, and says so).
wait_steady() {
  i=0
  while [ $i -lt 300 ]; do
    baton status --socket "/tmp/$1.sock" 2>/dev/null | grep -qE "^scanning: (windows: off|continuous)" && return 0
    i=$((i + 1))
    sleep 0.2
  done
  echo "$(now) agent $1 did not reach its steady state within 60 s: $(baton status --socket "/tmp/$1.sock" 2>&1 | grep "^scanning")"
  return 1
}

# first_window_over NAME FROM_LINE: agent NAME's scan schedule opened a
# window and closed it again, both logged after line FROM_LINE of its log
# (--verbose: "scan schedule: window", then "scan schedule: off"), within
# 45 s; 1 if not.
first_window_over() {
  wait_log "/tmp/$1.log" "scan schedule: window" 45 "$2" >/dev/null || return 1
  w=$(tail -n +$(($2 + 1)) "/tmp/$1.log" | grep -n -m1 "scan schedule: window" | cut -d: -f1)
  wait_log "/tmp/$1.log" "scan schedule: off" 10 $(($2 + w)) >/dev/null
}

# proc_sample PID: "TICKS WAKEUPS": the process's CPU time in clock ticks
# (user and system, all threads; USER_HZ is 100) and its voluntary context
# switches summed over its threads (each a wake-up from a sleep).
proc_sample() {
  ticks=$(awk '{print $14 + $15}' "/proc/$1/stat")
  wakeups=$(cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ {n += $2} END {print n + 0}')
  echo "$ticks $wakeups"
}

# thread_sample PID: one line per thread, "TID NAME WAKEUPS" (its voluntary
# context switches), for note_threads.
thread_sample() {
  for t in /proc/"$1"/task/*; do
    [ -r "$t/status" ] || continue
    printf '%s %s %s\n' "${t##*/}" "$(tr ' ' _ <"$t/comm")" \
      "$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status")"
  done
}

# note_threads CASE WHAT BEFORE AFTER SECONDS: a NOTE-THREADS line per thread
# of WHAT that woke between two thread_sample files taken SECONDS apart (a
# thread that started meanwhile counts from 0), most wake-ups first: which
# thread to look at when note_cpu's figure is high.
note_threads() {
  awk -v c="$1" -v w="$2" -v s="$5" '
    NR == FNR { before[$1] = $3; next }
    { n = $3 - before[$1]; if (n > 0) printf "%d NOTE-THREADS %s %s: %s (%s) %.2f wake-ups/s\n", n, c, w, $2, $1, n / s }
  ' "$3" "$4" | sort -rn | cut -d' ' -f2- >/dev/console
}

# note_cpu CASE WHAT BEFORE AFTER SECONDS: a NOTE-CPU line on the console
# (run.sh lists them) with WHAT's CPU share and wake-ups per second between
# two proc_sample results taken SECONDS apart. Under qemu's software
# emulation CPU time is many times a real machine's: compare the lines of one
# run, not with a laptop.
note_cpu() {
  set -- "$1" "$2" $3 $4 "$5"
  echo "NOTE-CPU $1 $2: $(awk -v t="$(($5 - $3))" -v w="$(($6 - $4))" -v s="$7" \
    'BEGIN {printf "%.2f %% CPU, %.2f wake-ups/s over %d s", t / s, w / s, s}')" >/dev/console
}
