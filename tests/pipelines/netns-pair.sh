# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced: two network namespaces, $cap (10.213.0.1, the capture host) and
# $gpu (10.213.0.2, the GPU host), joined by a veth pair, as a capture host and a GPU host
# would be; removed, with whatever still runs in them, at exit. Needs root
# and iproute2: netns_pair_up returns 77 without them.
cap=ppcap$$ gpu=ppgpu$$
netns_pair_down() {
  local ns
  for ns in "$cap" "$gpu"; do
    ip netns pids "$ns" 2> /dev/null | xargs -r kill -9 2> /dev/null || true
    ip netns del "$ns" 2> /dev/null || true
  done
}

netns_pair_up() {
  if [ "$(id -u)" -ne 0 ] || ! command -v ip > /dev/null; then
    echo "network namespaces need root and iproute2: skipped"
    return 77
  fi
  if ! ip netns add "$cap" || ! ip netns add "$gpu"; then
    echo "cannot make network namespaces here: skipped"
    return 77
  fi
  ip link add "v$cap" netns "$cap" type veth peer name "v$gpu" netns "$gpu"
  ip -n "$cap" addr add 10.213.0.1/24 dev "v$cap"
  ip -n "$gpu" addr add 10.213.0.2/24 dev "v$gpu"
  local ns
  for ns in "$cap" "$gpu"; do
    ip -n "$ns" link set lo up
    # MTU=9000: jumbo frames, as a network that carries video may be set up.
    [ -z "${MTU:-}" ] || ip -n "$ns" link set "v$ns" mtu "$MTU"
    ip -n "$ns" link set "v$ns" up
  done
  export CAPTURE_HOST=10.213.0.1
}

# Starts pipelines/sender.sh in the capture namespace (pid in $sender)
# and returns once it listens for the receiver.
start_sender() { # log file, extra environment...
  local log=$1
  shift
  env "$@" ip netns exec "$cap" "$root/pipelines/sender.sh" > "$log" 2>&1 &
  sender=$!
  for _ in $(seq 100); do
    ip netns exec "$cap" ss -ltn | grep -q ':5000 ' && return 0
    sleep 0.05
  done
  echo "the sender did not start listening:"
  cat "$log"
  return 1
}
