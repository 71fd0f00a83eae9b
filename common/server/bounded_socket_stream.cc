#include "common/server/bounded_socket_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace jobwheel {
namespace {

void IpAndPort(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
    port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text));
    port = ntohs(a.sin6_port);
  }
  ip = text;
}

}  // namespace

BoundedSocketStream::BoundedSocketStream(int fd, Limits limits, const Clock& clock)
    : fd_(fd), limits_(limits), clock_(clock) {}

bool BoundedSocketStream::Await(short events, absl::Time deadline) const {
  for (;;) {
    const absl::Duration left = deadline - clock_.Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{fd_, events, 0};
    const int ms =
        static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 60 * 60 * 1000));
    const int n = ::poll(&p, 1, ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) continue;  // Re-check the deadline.
    return (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }
}

ssize_t BoundedSocketStream::Fill() {
  for (;;) {
    const ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    buffered_begin_ = 0;
    buffered_end_ = n > 0 ? static_cast<size_t>(n) : 0;
    return n;
  }
}

bool BoundedSocketStream::AwaitRequest(absl::Duration idle, const std::function<bool()>& stopping) {
  if (buffered_begin_ == buffered_end_) {
    const absl::Time idle_end = clock_.Now() + idle;
    bool readable = false;
    while (!readable) {
      if (stopping()) return false;
      const absl::Time now = clock_.Now();
      if (now >= idle_end) return false;
      readable = Await(POLLIN, std::min(idle_end, now + absl::Milliseconds(100)));
    }
    if (Fill() <= 0) return false;
  }
  read_deadline_ = clock_.Now() + limits_.request_deadline;
  write_deadline_ = absl::InfiniteFuture();
  writing_ = false;
  budget_ = limits_.header_bytes;
  reading_body_ = false;
  over_budget_ = false;
  past_deadline_ = false;
  return true;
}

bool BoundedSocketStream::is_readable() const {
  return buffered_begin_ < buffered_end_ || Await(POLLIN, read_deadline_);
}

bool BoundedSocketStream::is_writable() const {
  return Await(POLLOUT, writing_ ? write_deadline_ : clock_.Now() + limits_.write_timeout);
}

ssize_t BoundedSocketStream::read(char* ptr, size_t size) {
  if (size == 0) return 0;
  if (budget_ == 0) {
    over_budget_ = true;
    return -1;
  }
  if (buffered_begin_ == buffered_end_) {
    if (!Await(POLLIN, read_deadline_)) {
      past_deadline_ = clock_.Now() >= read_deadline_;
      return -1;
    }
    const ssize_t n = Fill();
    if (n <= 0) return n;
  }
  const size_t n = std::min({size, buffered_end_ - buffered_begin_, budget_});
  std::memcpy(ptr, buffer_.data() + buffered_begin_, n);
  buffered_begin_ += n;
  budget_ -= n;
  return static_cast<ssize_t>(n);
}

ssize_t BoundedSocketStream::write(const char* ptr, size_t size) {
  if (!writing_) {
    writing_ = true;
    write_deadline_ = clock_.Now() + limits_.write_timeout;
  }
  for (;;) {
    if (!Await(POLLOUT, write_deadline_)) return -1;
    const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    return n;
  }
}

void BoundedSocketStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  port = 0;
  ip.clear();
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) IpAndPort(addr, ip, port);
}

void BoundedSocketStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  port = 0;
  ip.clear();
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) IpAndPort(addr, ip, port);
}

}  // namespace jobwheel
