#include "sdk/internal/lane.h"

#include <algorithm>

namespace jobwheel::sdk {

void Lane::Unqueue(const std::shared_ptr<RunState>& run) {
  queue.erase(std::remove(queue.begin(), queue.end(), run), queue.end());
}

Admission Lanes::Admit(int64_t job_id, jobwheel::v1::BlockStrategy strategy) {
  Admission a;
  std::shared_ptr<Lane> lane;
  if (auto it = lanes_.find(job_id); it != lanes_.end()) lane = it->second;
  const bool busy = lane != nullptr && lane->busy();
  if (busy) {
    a.blocker = lane->current != nullptr ? lane->current->run_id() : lane->queue.front()->run_id();
  }
  if (busy && strategy == jobwheel::v1::BLOCK_STRATEGY_DISCARD_LATER) {
    a.kind = Admission::Kind::kDiscard;
    return a;
  }
  if (busy && strategy == jobwheel::v1::BLOCK_STRATEGY_COVER_EARLY) {
    a.covered_queued.assign(lane->queue.begin(), lane->queue.end());
    lane->queue.clear();
    a.covered_running = lane->current;
    lanes_.erase(job_id);
    lane = nullptr;
  }
  if (lane == nullptr) {
    lane = std::make_shared<Lane>();
    lane->job_id = job_id;
    lanes_[job_id] = lane;
  }
  a.kind = lane->busy() ? Admission::Kind::kQueue : Admission::Kind::kStart;
  a.lane = std::move(lane);
  return a;
}

void Lanes::DropIfIdle(const std::shared_ptr<Lane>& lane) {
  auto it = lanes_.find(lane->job_id);
  if (it != lanes_.end() && it->second == lane && lane->current == nullptr) lanes_.erase(it);
}

}  // namespace jobwheel::sdk
