#ifndef JOBWHEEL_BENCH_RUN_INFO_H_
#define JOBWHEEL_BENCH_RUN_INFO_H_

#include <string>
#include <utility>
#include <vector>

#include "bench/bench_db.h"
#include "bench/options.h"
#include "bench/report.h"

namespace jobwheel::bench {

// The machine: CPUs, model, memory, load average.
Report MachineReport(const BenchOptions& options);

// What a figure depends on besides the code: the git commit, the PostgreSQL settings that
// govern commit and checkpoint cost (SHOWn by the server itself), the file system of its data
// directory, and every flag the harness was given (`flags`: name, value).
Report RunReport(const BenchOptions& options, BenchDb& db,
                 const std::vector<std::pair<std::string, std::string>>& flags);

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_RUN_INFO_H_
