// A TCP proxy for the chaos suite that can delay what the upstream sends: it stands in front of
// PostgreSQL (in PostgreSQL's network namespace) so the suite can slow the database by a fixed
// delay per chunk of bytes when the kernel has no `netem` qdisc. SIGUSR1 turns the delay on,
// SIGUSR2 off; while it is on, every chunk read from the upstream is written to the client
// `--delay_ms` after it was read (order kept, no throughput limit), as netem on the upstream's
// interface would. Test tooling, not a product service: one thread, epoll, no dependencies.
//
//   delay_proxy --listen=HOST:PORT --upstream=HOST:PORT [--delay_ms=200]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

volatile sig_atomic_t g_delay_on = 0;

void OnUsr1(int) { g_delay_on = 1; }
void OnUsr2(int) { g_delay_on = 0; }

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

bool ParseAddr(const std::string& s, sockaddr_in* out) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  std::memset(out, 0, sizeof(*out));
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<uint16_t>(std::atoi(s.c_str() + colon + 1)));
  return inet_pton(AF_INET, s.substr(0, colon).c_str(), &out->sin_addr) == 1;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

struct Chunk {
  int64_t ready_at;
  std::string data;
  size_t offset = 0;
};

// One direction of a connection: bytes read from `from`, queued, written to `to`.
struct Pipe {
  int from = -1;
  int to = -1;
  bool delayed = false;  // The upstream → client direction.
  bool eof = false;      // `from` reached end of file.
  bool shut = false;     // `to` was shut down for writing.
  std::deque<Chunk> queue;
  size_t queued = 0;
};

struct Conn {
  int client = -1;
  int upstream = -1;
  bool connected = false;
  Pipe up;    // client → upstream
  Pipe down;  // upstream → client
};

constexpr size_t kReadSize = 64 << 10;
constexpr size_t kMaxQueued = 8 << 20;  // Stop reading a side whose bytes are not written.

class Proxy {
 public:
  Proxy(sockaddr_in upstream, int64_t delay_ms) : upstream_(upstream), delay_ms_(delay_ms) {}

  int Run(const sockaddr_in& listen_addr) {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(listener_, reinterpret_cast<const sockaddr*>(&listen_addr), sizeof(listen_addr)) !=
            0 ||
        listen(listener_, 512) != 0) {
      std::fprintf(stderr, "delay_proxy: cannot listen: %s\n", std::strerror(errno));
      return 1;
    }
    SetNonBlocking(listener_);
    Watch(listener_, EPOLLIN, EPOLL_CTL_ADD);
    std::fprintf(stderr, "delay_proxy: listening\n");
    epoll_event events[256];
    int last_mode = -1;
    while (true) {
      if (g_delay_on != last_mode) {
        last_mode = g_delay_on;
        std::fprintf(stderr, "delay_proxy: delay %s\n", last_mode ? "on" : "off");
      }
      const int n = epoll_wait(ep_, events, 256, Timeout());
      if (n < 0 && errno != EINTR) {
        std::fprintf(stderr, "delay_proxy: epoll_wait: %s\n", std::strerror(errno));
        return 1;
      }
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listener_) {
          Accept();
          continue;
        }
        auto it = by_fd_.find(fd);
        if (it == by_fd_.end()) continue;
        std::shared_ptr<Conn> c = it->second;
        if (fd == c->upstream && !c->connected) {
          int err = 0;
          socklen_t len = sizeof(err);
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
          if (err != 0) {
            Close(c);
            continue;
          }
          c->connected = true;
        }
        Pump(c);
      }
      // Delayed chunks that became due.
      std::vector<std::shared_ptr<Conn>> due;
      const int64_t now = NowMs();
      for (const auto& [fd, c] : by_fd_) {
        if (fd == c->upstream && c->connected && !c->down.queue.empty() &&
            c->down.queue.front().ready_at <= now) {
          due.push_back(c);
        }
      }
      for (const auto& c : due) {
        if (c->client >= 0) Pump(c);
      }
    }
  }

 private:
  void Watch(int fd, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(ep_, op, fd, &ev);
  }

  int Timeout() const {
    int64_t next = -1;
    for (const auto& [fd, c] : by_fd_) {
      if (fd != c->upstream || c->down.queue.empty()) continue;
      const int64_t at = c->down.queue.front().ready_at;
      if (next < 0 || at < next) next = at;
    }
    if (next < 0) return 100;  // Wakes up now and then to notice a signal.
    const int64_t wait = next - NowMs();
    return wait <= 0 ? 0 : static_cast<int>(wait);
  }

  void Accept() {
    while (true) {
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      const int up = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      auto c = std::make_shared<Conn>();
      c->client = fd;
      c->upstream = up;
      c->up.from = fd;
      c->up.to = up;
      c->down.from = up;
      c->down.to = fd;
      c->down.delayed = true;
      by_fd_[fd] = c;
      by_fd_[up] = c;
      const int rc = connect(up, reinterpret_cast<const sockaddr*>(&upstream_), sizeof(upstream_));
      if (rc != 0 && errno != EINPROGRESS) {
        Close(c);
        continue;
      }
      c->connected = rc == 0;
      Watch(fd, c->connected ? EPOLLIN : 0, EPOLL_CTL_ADD);
      Watch(up, EPOLLIN | EPOLLOUT, EPOLL_CTL_ADD);
    }
  }

  // Reads what `p.from` has, writes what is due to `p.to`. False when the connection failed.
  bool Move(Pipe& p) {
    while (!p.eof && p.queued < kMaxQueued) {
      char buf[kReadSize];
      const ssize_t r = read(p.from, buf, sizeof(buf));
      if (r > 0) {
        const int64_t at = p.delayed && g_delay_on ? NowMs() + delay_ms_ : 0;
        p.queue.push_back(Chunk{at, std::string(buf, static_cast<size_t>(r))});
        p.queued += static_cast<size_t>(r);
        continue;
      }
      if (r == 0) {
        p.eof = true;
        break;
      }
      if (errno == EAGAIN || errno == EINTR) break;
      return false;
    }
    const int64_t now = NowMs();
    while (!p.queue.empty() && p.queue.front().ready_at <= now) {
      Chunk& ch = p.queue.front();
      const ssize_t w = write(p.to, ch.data.data() + ch.offset, ch.data.size() - ch.offset);
      if (w < 0) {
        if (errno == EAGAIN || errno == EINTR) break;
        return false;
      }
      ch.offset += static_cast<size_t>(w);
      p.queued -= static_cast<size_t>(w);
      if (ch.offset == ch.data.size()) p.queue.pop_front();
    }
    if (p.eof && p.queue.empty() && !p.shut) {
      shutdown(p.to, SHUT_WR);
      p.shut = true;
    }
    return true;
  }

  void Pump(const std::shared_ptr<Conn>& c) {
    if (!c->connected) return;
    if (!Move(c->up) || !Move(c->down) || (c->up.shut && c->down.shut)) {
      Close(c);
      return;
    }
    // Interest: read while the side is open and its queue has room; write while bytes wait.
    auto interest = [](const Pipe& reading, const Pipe& writing) {
      uint32_t e = 0;
      if (!reading.eof && reading.queued < kMaxQueued) e |= EPOLLIN;
      if (!writing.queue.empty() && writing.queue.front().ready_at <= NowMs()) e |= EPOLLOUT;
      return e;
    };
    Watch(c->client, interest(c->up, c->down), EPOLL_CTL_MOD);
    Watch(c->upstream, interest(c->down, c->up), EPOLL_CTL_MOD);
  }

  void Close(const std::shared_ptr<Conn>& c) {
    for (int fd : {c->client, c->upstream}) {
      if (fd < 0) continue;
      epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
      by_fd_.erase(fd);
      close(fd);
    }
    c->client = c->upstream = -1;
  }

  const sockaddr_in upstream_;
  const int64_t delay_ms_;
  int ep_ = -1;
  int listener_ = -1;
  std::map<int, std::shared_ptr<Conn>> by_fd_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string listen, upstream;
  int64_t delay_ms = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--listen=", 0) == 0) listen = a.substr(9);
    if (a.rfind("--upstream=", 0) == 0) upstream = a.substr(11);
    if (a.rfind("--delay_ms=", 0) == 0) delay_ms = std::atoll(a.c_str() + 11);
  }
  sockaddr_in l, u;
  if (!ParseAddr(listen, &l) || !ParseAddr(upstream, &u) || delay_ms < 0) {
    std::fprintf(stderr, "usage: delay_proxy --listen=IP:PORT --upstream=IP:PORT [--delay_ms=N]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = OnUsr1;
  sigaction(SIGUSR1, &sa, nullptr);
  sa.sa_handler = OnUsr2;
  sigaction(SIGUSR2, &sa, nullptr);
  return Proxy(u, delay_ms).Run(l);
}
