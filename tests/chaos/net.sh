# shellcheck shell=bash
# Network namespaces for the chaos suite (sourced by tests/chaos/run.sh): every process of the
# stack gets its own namespace with one veth interface on a private bridge, so the suite can
# cut one process off from others (a partition) or slow one down without touching the rest.
#
#   net_usable                     whether namespaces can be made here (root, ip, a test ns)
#   net_setup NAME...              a hub namespace with a bridge, the host's side (address .1
#                                  in the root namespace, for the suite's own psql,
#                                  jobwheelctl and health checks), and one namespace per NAME
#                                  with address NET_IP[NAME]; its command prefix is NET_EXEC[NAME]
#   net_partition A B...           A and each B stop hearing each other (silently: packets are
#                                  dropped on arrival, as on a cut link; connections hang)
#   net_heal                       removes every partition
#   net_cleanup                    deletes the namespaces and the host's interface
#
# Addresses: 198.18.N.0/24 (the benchmarking range, RFC 2544), N from the suite's pid; they
# exist only inside these namespaces and on the host's veth, and nothing routes them further.
# Partitions are policy-routing rules (`ip rule ... blackhole`), so only iproute2 is needed:
# in each namespace the `local` table's rule moves from priority 0 to 100 and a partition's
# rule at priority 10 drops what arrives from the cut-off address before it is delivered.

NET_ID=$(($$ % 100000))
NET_OCT=$((1 + $$ % 250))
NET_PREFIX="198.18.$NET_OCT"
NET_HUB="jwchaos$NET_ID-hub"
NET_HOST_IF="jw${NET_ID}h"
NET_MADE=()       # namespaces made, for net_cleanup
NET_RULES=()      # "NAMESPACE FROM_ADDRESS" of the partitions in force
declare -A NET_IP=() NET_NS=() NET_EXEC=()

net_usable() {
  NET_WHY=""
  [ "$(id -u)" = 0 ] || { NET_WHY="not root"; return 1; }
  command -v ip >/dev/null || { NET_WHY="no ip command (iproute2)"; return 1; }
  local probe="jwchaos$NET_ID-probe"
  ip netns add "$probe" 2>/dev/null || { NET_WHY="ip netns add fails"; return 1; }
  if ! ip link add "jw${NET_ID}p0" type veth peer name "jw${NET_ID}p1" 2>/dev/null; then
    ip netns del "$probe"
    NET_WHY="no veth support"
    return 1
  fi
  ip link del "jw${NET_ID}p0" 2>/dev/null
  ip netns del "$probe"
}

# net_has_netem: whether the kernel has the netem qdisc (tried in a throwaway namespace).
net_has_netem() {
  local probe="jwchaos$NET_ID-netem" rc=1
  ip netns add "$probe" 2>/dev/null || return 1
  ip -n "$probe" link set lo up
  ip netns exec "$probe" tc qdisc add dev lo root netem delay 1ms 2>/dev/null && rc=0
  ip netns del "$probe"
  return $rc
}

_net_ns() {  # _net_ns NS: a namespace with lo up and partition-ready rules
  ip netns add "$1" || return 1
  NET_MADE+=("$1")
  ip -n "$1" link set lo up &&
    ip -n "$1" rule add pref 100 lookup local &&
    ip -n "$1" rule del pref 0 lookup local
}

net_setup() {
  if ip -4 addr show | grep -q " $NET_PREFIX\."; then
    NET_WHY="$NET_PREFIX.0/24 is in use on this host"
    return 1
  fi
  _net_ns "$NET_HUB" || return 1
  ip -n "$NET_HUB" link add br0 type bridge && ip -n "$NET_HUB" link set br0 up || return 1
  # The host's side.
  ip link add "$NET_HOST_IF" type veth peer name "jw${NET_ID}hb" &&
    ip link set "jw${NET_ID}hb" netns "$NET_HUB" &&
    ip -n "$NET_HUB" link set "jw${NET_ID}hb" master br0 up &&
    ip addr add "$NET_PREFIX.1/24" dev "$NET_HOST_IF" &&
    ip link set "$NET_HOST_IF" up || return 1
  local n i=10
  for n in "$@"; do
    local ns="jwchaos$NET_ID-$n" a="jw${NET_ID}a$i" b="jw${NET_ID}b$i"
    _net_ns "$ns" || return 1
    ip link add "$a" type veth peer name "$b" &&
      ip link set "$a" netns "$ns" && ip link set "$b" netns "$NET_HUB" &&
      ip -n "$NET_HUB" link set "$b" master br0 up &&
      ip -n "$ns" link set "$a" name eth0 &&
      ip -n "$ns" addr add "$NET_PREFIX.$i/24" dev eth0 &&
      ip -n "$ns" link set eth0 up || return 1
    NET_NS[$n]=$ns
    NET_IP[$n]=$NET_PREFIX.$i
    NET_EXEC[$n]="ip netns exec $ns"
    i=$((i + 1))
  done
}

# net_partition A B...: A and each B drop what arrives from the other.
net_partition() {
  local a=$1 b
  shift
  for b in "$@"; do
    ip -n "${NET_NS[$a]}" rule add pref 10 from "${NET_IP[$b]}" blackhole &&
      NET_RULES+=("${NET_NS[$a]} ${NET_IP[$b]}") || return 1
    ip -n "${NET_NS[$b]}" rule add pref 10 from "${NET_IP[$a]}" blackhole &&
      NET_RULES+=("${NET_NS[$b]} ${NET_IP[$a]}") || return 1
  done
}

net_heal() {
  local r
  for r in "${NET_RULES[@]}"; do
    ip -n "${r% *}" rule del pref 10 from "${r#* }" blackhole 2>/dev/null
  done
  NET_RULES=()
}

net_cleanup() {
  local ns
  for ns in "${NET_MADE[@]}"; do ip netns del "$ns" 2>/dev/null; done
  NET_MADE=()
  ip link del "$NET_HOST_IF" 2>/dev/null
  return 0
}
