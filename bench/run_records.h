#ifndef JOBWHEEL_BENCH_RUN_RECORDS_H_
#define JOBWHEEL_BENCH_RUN_RECORDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "bench/fire_sets.h"

namespace jobwheel::bench {

// One run as the bench executor saw it (a line of its --record_file): the executor's own
// record of when the handler started, which is what "started" means in the figures.
struct RunRecord {
  int64_t run_id = 0;
  int64_t job_id = 0;
  int64_t fire_id = 0;
  int attempt = 0;
  int64_t scheduled_us = 0;  // The fire's scheduled time, Unix µs.
  int64_t received_us = 0;   // When the handler started, Unix µs.
};

// Parses "run_id job_id fire_id attempt scheduled_us received_us" lines; a torn last line
// (the file is still being appended to) is skipped.
std::vector<RunRecord> ParseRecords(absl::string_view text);

// Reads a record file from byte `*offset` on, whole lines only (the executor may be
// mid-write), and advances `*offset` past them.
std::vector<RunRecord> ReadNewRecords(const std::string& path, size_t* offset);

// The runs of `jobs` among `records`: every execution's key (repeats included) and the earliest
// handler start of each key.
struct Executions {
  std::vector<FireKey> keys;
  absl::flat_hash_map<FireKey, int64_t> first_start_us;
};
Executions CollectExecutions(const std::vector<RunRecord>& records,
                             const std::vector<JobSchedule>& jobs);

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_RUN_RECORDS_H_
