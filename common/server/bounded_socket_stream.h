#ifndef JOBWHEEL_COMMON_SERVER_BOUNDED_SOCKET_STREAM_H_
#define JOBWHEEL_COMMON_SERVER_BOUNDED_SOCKET_STREAM_H_

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <functional>
#include <string>

#include "absl/time/time.h"
#include "common/time/clock.h"
#include "httplib.h"

namespace jobwheel {

// One accepted connection as cpp-httplib's Stream, with bounds a slow or greedy client cannot
// stretch: each request (headers and body together) must arrive by a deadline set when its
// first byte comes, however slowly it trickles; it may consume at most a byte budget (the
// headers', then the body's once the headers are read); and each response must be written
// within a write deadline. A read or write past a bound fails (httplib then gives up on the
// request) and the stream says which bound it was. Reads are buffered. Used by one thread.
class BoundedSocketStream : public httplib::Stream {
 public:
  struct Limits {
    absl::Duration request_deadline = absl::Seconds(5);  // First byte to last body byte.
    absl::Duration write_timeout = absl::Seconds(10);    // First to last byte of a response.
    size_t header_bytes = 64 << 10;                      // Request line and headers.
  };

  BoundedSocketStream(int fd, Limits limits, const Clock& clock);

  // Waits until the next request's first byte is here: true; false when the client closed the
  // connection, sent nothing for `idle`, or `stopping` said so (asked every 100 ms). Then the
  // request's deadline, header budget and write deadline start.
  bool AwaitRequest(absl::Duration idle, const std::function<bool()>& stopping);
  // From now on the request may consume `bytes` more (its body).
  void LimitBody(size_t bytes) {
    budget_ = bytes;
    reading_body_ = true;
  }

  bool reading_body() const { return reading_body_; }
  bool over_budget() const { return over_budget_; }
  bool past_deadline() const { return past_deadline_; }

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  // poll() for `events` until `deadline`; false when it passed first or the socket failed.
  bool Await(short events, absl::Time deadline) const;
  // Reads what the socket has into the buffer: bytes read, 0 closed, -1 error.
  ssize_t Fill();

  const int fd_;
  const Limits limits_;
  const Clock& clock_;
  std::array<char, 4096> buffer_;
  size_t buffered_begin_ = 0;
  size_t buffered_end_ = 0;
  absl::Time read_deadline_ = absl::InfiniteFuture();
  absl::Time write_deadline_ = absl::InfiniteFuture();
  bool writing_ = false;
  size_t budget_ = 0;
  bool reading_body_ = false;
  bool over_budget_ = false;
  bool past_deadline_ = false;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_SERVER_BOUNDED_SOCKET_STREAM_H_
