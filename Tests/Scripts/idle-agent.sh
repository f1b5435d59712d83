# Sourced by bench-idle.sh and link-order.sh: the set-up of one idle agent.
#
#   idle_agent_workspace LABEL
#
# Makes a scratch folder /tmp/LABEL.XXXXXX in `work`, and empties agent_pid
# and radio_pid; when the script exits, the agent and the radio they name
# are killed and the folder removed.
idle_agent_workspace() {
  work=$(mktemp -d "/tmp/$1.XXXXXX")
  agent_pid=
  radio_pid=
  trap idle_agent_cleanup EXIT
}

idle_agent_cleanup() {
  [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null || true
  [ -n "$radio_pid" ] && kill "$radio_pid" 2>/dev/null || true
  rm -rf "$work"
}

#   idle_agent_setup NAME BIN WORK
#
# Makes WORK the agent's home (its configuration, state and runtime folders,
# a notes folder, a new group key from BIN), starts the simulated radio with
# one controller and no peer (its pid in radio_pid; it stops when descriptor
# 3 closes) and sets `controller` to its address. NAME starts error messages;
# the caller's `top` is the repository.
idle_agent_setup() {
  local name=$1 bin=$2 work=$3 port
  export HOME=$work XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state XDG_RUNTIME_DIR=$work/run
  mkdir -p "$work/config/baton" "$work/run" "$work/notes"
  "$bin" keygen > "$work/config/baton/key"
  chmod 600 "$work/config/baton/key"

  mkfifo "$work/radio.in"
  "$top/.venv/bin/python3" "$top/Tests/Radio/radio.py" --controllers 1 < "$work/radio.in" > "$work/radio.out" &
  radio_pid=$!
  exec 3> "$work/radio.in"   # the radio stops when this closes
  for _ in $(seq 100); do grep -q READY "$work/radio.out" 2>/dev/null && break; sleep 0.1; done
  port=$(awk '/READY/ {print $2}' "$work/radio.out")
  [ -n "$port" ] || { echo "$name: the simulated radio did not start" >&2; exit 1; }
  controller=tcp:127.0.0.1:$port
}
