#ifndef JOBWHEEL_COMMON_BASE_LRU_MAP_H_
#define JOBWHEEL_COMMON_BASE_LRU_MAP_H_

#include <cstddef>
#include <list>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace jobwheel {

// A map of at most `capacity` entries that evicts the least recently used one to make room.
// Find and Put count as uses. Not thread-safe: its owner locks.
template <typename K, typename V>
class LruMap {
 public:
  explicit LruMap(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // The value under `key` (now the most recently used), or nullptr.
  V* Find(const K& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }

  // Inserts or replaces; evicts the least recently used entry when full.
  V& Put(const K& key, V value) {
    if (V* existing = Find(key)) {
      *existing = std::move(value);
      return *existing;
    }
    if (index_.size() >= capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    order_.emplace_front(key, std::move(value));
    index_[key] = order_.begin();
    return order_.front().second;
  }

  void Erase(const K& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    order_.erase(it->second);
    index_.erase(it);
  }

  // The key Put evicts next when full (the least recently used), or nullptr when empty.
  const K* LeastRecentKey() const { return order_.empty() ? nullptr : &order_.back().first; }

  size_t size() const { return index_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  using Entry = std::pair<K, V>;
  const size_t capacity_;
  std::list<Entry> order_;  // Most recently used first.
  absl::flat_hash_map<K, typename std::list<Entry>::iterator> index_;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_BASE_LRU_MAP_H_
