#include "common/server/guarded_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace jobwheel {
namespace {

// httplib's accept loop hands each accepted socket over as a task that calls
// process_and_close_socket(sock). The queue runs that task once on the accepting thread with
// this set: the call only records the socket and returns, so the queue learns whose
// connection it is before it admits or refuses it.
thread_local int* peeked_socket = nullptr;
// The client of the connection a worker is about to serve (set by the queue).
thread_local const std::string* worker_client = nullptr;
thread_local GuardedHttpServer::Connection* current_connection = nullptr;

std::string PeerIp(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "unknown";
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in&>(addr).sin_addr, text, sizeof(text));
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6&>(addr).sin6_addr, text, sizeof(text));
  } else {
    return "unknown";
  }
  return text;
}

// A short answer without waiting for the client (it may not read), then the socket closed.
void Refuse(int fd) {
  static constexpr char kAnswer[] =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
      "Content-Length: 33\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
      "too many connections; retry later";
  (void)!::send(fd, kAnswer, sizeof(kAnswer) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

}  // namespace

// One worker thread per connection the admission allows, so admitted connections never queue
// behind each other; refused ones are closed on the accepting thread.
class GuardedHttpServer::AdmissionQueue : public httplib::TaskQueue {
 public:
  AdmissionQueue(GuardedHttpServer& server, int threads) : server_(server) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }

  void enqueue(std::function<void()> fn) override {
    int sock = -1;
    peeked_socket = &sock;
    fn();
    peeked_socket = nullptr;
    std::string client = sock >= 0 ? PeerIp(sock) : std::string("unknown");
    if (sock >= 0) {
      absl::Status admitted = server_.admission_.Admit(client);
      if (!admitted.ok()) {
        if (server_.on_refused_) server_.on_refused_(client, admitted);
        Refuse(sock);
        return;
      }
    }
    absl::MutexLock lock(&mu_);
    tasks_.push_back(Task{std::move(fn), std::move(client)});
  }

  void shutdown() override {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  ~AdmissionQueue() override {
    if (!threads_.empty()) shutdown();
  }

 private:
  struct Task {
    std::function<void()> fn;
    std::string client;
  };

  void Work() {
    for (;;) {
      Task task;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](AdmissionQueue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) {
              return q->stopping_ || !q->tasks_.empty();
            },
            this));
        if (tasks_.empty()) return;  // Stopping, and every connection handed over was served.
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      worker_client = &task.client;
      task.fn();
      worker_client = nullptr;
    }
  }

  GuardedHttpServer& server_;
  absl::Mutex mu_;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

GuardedHttpServer::Connection* GuardedHttpServer::Current() { return current_connection; }

GuardedHttpServer::GuardedHttpServer(Config config, RefusedCallback on_refused, const Clock& clock)
    : options_(config),
      on_refused_(std::move(on_refused)),
      clock_(clock),
      admission_(config.max_connections, config.max_connections_per_client) {
  // Small request/response exchanges: without it a reply's second write waits for the peer's
  // delayed ACK (tens of ms per call on a kept-alive connection).
  set_tcp_nodelay(true);
  // What httplib writes in its Keep-Alive response header.
  set_keep_alive_max_count(options_.keep_alive_max_count);
  set_keep_alive_timeout(std::max<time_t>(1, absl::ToInt64Seconds(options_.keep_alive_timeout)));
  const int threads = options_.max_connections;
  new_task_queue = [this, threads] { return new AdmissionQueue(*this, threads); };
}

bool GuardedHttpServer::process_and_close_socket(socket_t sock) {
  if (peeked_socket != nullptr) {
    *peeked_socket = sock;
    return true;
  }
  const std::string client = worker_client != nullptr ? *worker_client : std::string("unknown");
  Connection conn(sock, client, options_.limits, clock_);
  current_connection = &conn;
  bool ok = true;
  size_t left = options_.keep_alive_max_count;
  while (left > 0 && !stopping() &&
         conn.stream_.AwaitRequest(options_.keep_alive_timeout, [this] { return stopping(); })) {
    bool closed = false;
    ok = process_request(conn.stream_, /*close_connection=*/left == 1 || stopping(), closed,
                         nullptr);
    if (!ok || closed || conn.close_ || conn.over_budget() || conn.past_deadline()) break;
    --left;
  }
  current_connection = nullptr;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  if (worker_client != nullptr) admission_.Release(client);
  return ok;
}

}  // namespace jobwheel
