#include "services/registry/stream_write_queue.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace jobwheel::registry {
namespace {

// Records what the queue asks of a reactor.
struct FakeReactor {
  void StartWrite(const std::string* message) { started.push_back(*message); }
  void Finish(grpc::Status status) { finished.push_back(status); }

  std::vector<std::string> started;
  std::vector<grpc::Status> finished;
};

using Queue = StreamWriteQueue<FakeReactor, std::string>;
using Strings = std::vector<std::string>;

TEST(StreamWriteQueueTest, WritesOneAtATimeInOrder) {
  FakeReactor reactor;
  Queue queue(&reactor);
  EXPECT_EQ(queue.Enqueue("a"), Queue::Queued::kYes);
  EXPECT_EQ(queue.Enqueue("b"), Queue::Queued::kYes);
  EXPECT_EQ(queue.Enqueue("c"), Queue::Queued::kYes);
  EXPECT_EQ(reactor.started, Strings{"a"});  // b and c wait for a's OnWriteDone.
  queue.OnWriteDone(true);
  EXPECT_EQ(reactor.started, (Strings{"a", "b"}));
  queue.OnWriteDone(true);
  queue.OnWriteDone(true);
  EXPECT_EQ(reactor.started, (Strings{"a", "b", "c"}));
  // Idle again: the next message is written at once.
  EXPECT_EQ(queue.Enqueue("d"), Queue::Queued::kYes);
  EXPECT_EQ(reactor.started, (Strings{"a", "b", "c", "d"}));
  EXPECT_TRUE(reactor.finished.empty());
}

TEST(StreamWriteQueueTest, FinishesAtOnceWhenIdleAndOnlyOnce) {
  FakeReactor reactor;
  Queue queue(&reactor);
  queue.FinishAfterWrites(grpc::Status(grpc::StatusCode::UNAVAILABLE, "closing"));
  ASSERT_EQ(reactor.finished.size(), 1u);
  EXPECT_EQ(reactor.finished[0].error_code(), grpc::StatusCode::UNAVAILABLE);
  queue.FinishAfterWrites(grpc::Status::OK);
  EXPECT_EQ(queue.Enqueue("late"), Queue::Queued::kFinishing);
  EXPECT_EQ(reactor.finished.size(), 1u);
  EXPECT_TRUE(reactor.started.empty());
}

TEST(StreamWriteQueueTest, FinishWaitsForTheWriteInFlightAndDropsTheRest) {
  FakeReactor reactor;
  Queue queue(&reactor);
  queue.Enqueue("a");
  queue.Enqueue("b");
  queue.FinishAfterWrites(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad"));
  EXPECT_TRUE(reactor.finished.empty());  // Finish must not overlap the write of a.
  EXPECT_EQ(queue.Enqueue("c"), Queue::Queued::kFinishing);
  queue.OnWriteDone(true);
  EXPECT_EQ(reactor.started, Strings{"a"});
  ASSERT_EQ(reactor.finished.size(), 1u);
  EXPECT_EQ(reactor.finished[0].error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(reactor.finished[0].error_message(), "bad");
}

TEST(StreamWriteQueueTest, OverflowEndsTheStreamAfterTheWriteInFlight) {
  FakeReactor reactor;
  Queue queue(&reactor, /*max_queued=*/2,
              grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "too slow"));
  EXPECT_EQ(queue.Enqueue("a"), Queue::Queued::kYes);
  EXPECT_EQ(queue.Enqueue("b"), Queue::Queued::kYes);
  EXPECT_EQ(queue.Enqueue("c"), Queue::Queued::kOverflow);
  EXPECT_EQ(queue.Enqueue("d"), Queue::Queued::kFinishing);
  // A later end request does not replace the overflow status.
  queue.FinishAfterWrites(grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down"));
  EXPECT_TRUE(reactor.finished.empty());
  queue.OnWriteDone(true);
  EXPECT_EQ(reactor.started, Strings{"a"});
  ASSERT_EQ(reactor.finished.size(), 1u);
  EXPECT_EQ(reactor.finished[0].error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST(StreamWriteQueueTest, ABrokenStreamEndsWithTheGivenStatus) {
  FakeReactor reactor;
  Queue queue(&reactor);
  queue.Enqueue("a");
  queue.Enqueue("b");
  queue.OnWriteDone(false, grpc::Status(grpc::StatusCode::CANCELLED, "went away"));
  EXPECT_EQ(reactor.started, Strings{"a"});
  ASSERT_EQ(reactor.finished.size(), 1u);
  EXPECT_EQ(reactor.finished[0].error_code(), grpc::StatusCode::CANCELLED);
}

TEST(StreamWriteQueueTest, ABrokenStreamWithoutAStatusWaitsForTheReactorsEnd) {
  FakeReactor reactor;
  Queue queue(&reactor);
  queue.Enqueue("a");
  queue.Enqueue("b");
  queue.OnWriteDone(false);
  EXPECT_EQ(reactor.started, Strings{"a"});  // b is dropped with the broken stream.
  EXPECT_TRUE(reactor.finished.empty());
  queue.FinishAfterWrites(grpc::Status::OK);  // Nothing in flight: at once.
  ASSERT_EQ(reactor.finished.size(), 1u);
  EXPECT_TRUE(reactor.finished[0].ok());
}

}  // namespace
}  // namespace jobwheel::registry
