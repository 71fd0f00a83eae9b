#ifndef JOBWHEEL_SERVICES_REGISTRY_STREAM_WRITE_QUEUE_H_
#define JOBWHEEL_SERVICES_REGISTRY_STREAM_WRITE_QUEUE_H_

#include <cstddef>
#include <deque>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/types/optional.h"
#include "grpcpp/grpcpp.h"

namespace jobwheel::registry {

// The write side of a server streaming reactor (gRPC callback API), which allows one write in
// flight at a time: messages are queued and written in order, each after the previous one's
// OnWriteDone, and the stream is finished only once no write is in flight. `Reactor` has
// StartWrite(const Message*) and Finish(grpc::Status) (a grpc::ServerWriteReactor or
// ServerBidiReactor). After Finish the reactor may be deleted at any time, so nothing here
// touches it or this queue once it has called Finish. Thread-safe.
template <typename Reactor, typename Message>
class StreamWriteQueue {
 public:
  enum class Queued {
    kYes,        // Written now or after the messages before it.
    kFinishing,  // Dropped: the stream is ending.
    kOverflow,   // Dropped, and the stream now ends with the overflow status.
  };

  // `max_queued` (0: no limit) bounds the messages waiting or in flight; one more ends the
  // stream with `overflow` instead of buffering without bound.
  explicit StreamWriteQueue(Reactor* reactor, size_t max_queued = 0,
                            grpc::Status overflow = grpc::Status::OK)
      : reactor_(reactor), max_queued_(max_queued), overflow_(std::move(overflow)) {}

  Queued Enqueue(Message message) {
    const Message* start = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (finish_requested_) return Queued::kFinishing;
      if (max_queued_ > 0 && writes_.size() >= max_queued_) {
        // A write is in flight (the queue is not empty): its OnWriteDone finishes.
        finish_requested_ = true;
        finish_status_ = overflow_;
        return Queued::kOverflow;
      }
      writes_.push_back(std::move(message));
      if (!writing_) {
        writing_ = true;
        start = &writes_.front();
      }
    }
    if (start != nullptr) reactor_->StartWrite(start);
    return Queued::kYes;
  }

  // From the reactor's OnWriteDone. `ok` false: the stream is broken, the queue is dropped and,
  // when `broken` is set and no end was requested yet, the stream ends with `broken`.
  void OnWriteDone(bool ok, absl::optional<grpc::Status> broken = absl::nullopt) {
    const Message* next = nullptr;
    bool finish = false;
    grpc::Status status;
    {
      absl::MutexLock lock(&mu_);
      writes_.pop_front();
      if (!ok) {
        writes_.clear();
        if (broken.has_value() && !finish_requested_) {
          finish_requested_ = true;
          finish_status_ = *std::move(broken);
        }
      }
      if (!writes_.empty() && !finish_requested_) {
        next = &writes_.front();
      } else {
        writing_ = false;
        writes_.clear();
        if (finish_requested_ && !finished_) {
          finish = finished_ = true;
          status = finish_status_;
        }
      }
    }
    if (next != nullptr) reactor_->StartWrite(next);
    if (finish) reactor_->Finish(std::move(status));
  }

  // Ends the stream with `status`: at once when no write is in flight, else when it completes
  // (messages queued behind it are dropped). Only the first end requested counts.
  void FinishAfterWrites(grpc::Status status) {
    {
      absl::MutexLock lock(&mu_);
      if (finish_requested_) return;
      finish_requested_ = true;
      finish_status_ = status;
      if (writing_ || finished_) return;  // OnWriteDone finishes.
      finished_ = true;
    }
    reactor_->Finish(std::move(status));
  }

 private:
  Reactor* const reactor_;
  const size_t max_queued_;
  const grpc::Status overflow_;

  absl::Mutex mu_;
  std::deque<Message> writes_ ABSL_GUARDED_BY(mu_);  // The front one is in flight.
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_STREAM_WRITE_QUEUE_H_
