# The user channel's errors on a real kernel, through baton's own transport
# code (hci-probe) and, when this build has it, `baton agent`: no such adapter,
# adapter up (EBUSY, then the suggested fix works), not permitted (no
# CAP_NET_ADMIN). Each names the cause and the fix and exits non-zero, no crash.
. /cases/lib.sh
start_btvirt

tools="hci-probe"
have_agent && tools="$tools agent"
for tool in $tools; do
  if [ "$tool" = agent ]; then
    mkdir -p /tmp/notes-e
    # (timeout: an agent that wrongly starts must not hang the case)
    run() { timeout 20 baton $(agent_args "hci$1" /tmp/notes-e vm-errors); }
    # As the unprivileged user nobody (no CAP_NET_ADMIN), with its own key
    # file and folders: the key must be readable by its owner only.
    mkdir -p /tmp/nobody/notes
    cp /etc/baton.key /tmp/nobody/key
    chown -R nobody:nogroup /tmp/nobody
    chmod 600 /tmp/nobody/key
    run_unprivileged() {
      timeout 20 su -s /bin/sh nobody -c "KEY=/tmp/nobody/key; . /cases/lib.sh; \
        baton \$(agent_args hci$1 /tmp/nobody/notes vm-nobody)"
    }
  else
    run() { hci-probe open "$1"; }
    # As the unprivileged user nobody: no CAP_NET_ADMIN.
    run_unprivileged() { su -s /bin/sh nobody -c "hci-probe open $1"; }
  fi

  expect_failure "$tool: no such adapter" \
    "hci7: no such Bluetooth adapter (ENODEV)" "adapters present: hci0" "hci1" "--controller hci0" -- \
    run 7

  btmgmt --index 0 power on
  expect_failure "$tool: adapter up" \
    "hci0: adapter is up or in use (EBUSY)" "btmgmt --index 0 power off" "bluetoothd" -- \
    run 0
  btmgmt --index 0 power off
  if [ "$tool" = hci-probe ]; then
    hci-probe open 0  # the suggested fix made it usable
  fi

  # Another program holding hci1's user channel: busy too, and the message
  # says that another program (another agent?) may be the one.
  hci-probe until-gone 1 >/tmp/hold.log 2>&1 &
  HOLD=$!
  sleep 0.3
  expect_failure "$tool: held by another program" \
    "hci1: adapter is up or in use (EBUSY)" "another baton agent" -- \
    run 1
  kill $HOLD
  wait $HOLD || true

  expect_failure "$tool: not permitted" \
    "hci0: not permitted (EPERM)" "CAP_NET_ADMIN" "setcap cap_net_admin+ep" -- \
    run_unprivileged 0
done
kill $BTVIRT_PID
