#ifndef JOBWHEEL_COMMON_GRPC_STUB_CACHE_H_
#define JOBWHEEL_COMMON_GRPC_STUB_CACHE_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/base/lru_map.h"
#include "common/grpc/channel.h"
#include "grpcpp/grpcpp.h"

namespace jobwheel {

// One stub per address, each on its own channel (MakeChannel with `tls`), reused by every later
// call to that address. At most `capacity` addresses are kept: the least recently used one is
// dropped to make room (addresses churn slowly, as servers come and go). A stub handed out
// stays valid for as long as its holder keeps the shared_ptr, evicted or not. Thread-safe.
//
//   StubCache<v1::ExecutorService::Stub> stubs(tls, 4096, [](auto channel) {
//     return v1::ExecutorService::NewStub(channel);
//   });
template <typename Stub>
class StubCache {
 public:
  using StubFactory = std::function<std::unique_ptr<Stub>(std::shared_ptr<grpc::Channel>)>;

  StubCache(ClientTls tls, size_t capacity, StubFactory make_stub)
      : tls_(std::move(tls)), make_stub_(std::move(make_stub)), stubs_(capacity) {}

  StubCache(const StubCache&) = delete;
  StubCache& operator=(const StubCache&) = delete;

  // The stub for `address`, made (with its channel) on first use; the channel's error (e.g. an
  // unreadable TLS file) otherwise, in which case nothing is cached. The channel is made
  // outside the lock (it reads the TLS files): callers of other addresses do not wait for it.
  absl::StatusOr<std::shared_ptr<Stub>> Get(absl::string_view address) {
    const std::string key(address);
    {
      absl::MutexLock lock(&mu_);
      if (std::shared_ptr<Stub>* cached = stubs_.Find(key)) return *cached;
    }
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = MakeChannel(key, tls_);
    if (!channel.ok()) return channel.status();
    absl::MutexLock lock(&mu_);
    // Another caller of `address` may have got there first: one stub per address.
    if (std::shared_ptr<Stub>* cached = stubs_.Find(key)) return *cached;
    std::shared_ptr<Stub> stub(make_stub_(*std::move(channel)));
    stubs_.Put(key, stub);
    return stub;
  }

  size_t size() const {
    absl::MutexLock lock(&mu_);
    return stubs_.size();
  }

 private:
  const ClientTls tls_;
  const StubFactory make_stub_;
  mutable absl::Mutex mu_;
  LruMap<std::string, std::shared_ptr<Stub>> stubs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_GRPC_STUB_CACHE_H_
