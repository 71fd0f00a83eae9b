# shellcheck shell=bash
# Free loopback TCP ports for test stacks and clusters.

# free_loopback_ports N: N free loopback ports, space-separated, all distinct (the sockets are
# held open together while picking).
free_loopback_ports() {
  /usr/bin/python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}
