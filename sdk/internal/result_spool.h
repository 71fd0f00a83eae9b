#ifndef JOBWHEEL_SDK_INTERNAL_RESULT_SPOOL_H_
#define JOBWHEEL_SDK_INTERNAL_RESULT_SPOOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jobwheel/v1/dispatcher.pb.h"

namespace jobwheel::sdk {

// Durable store of run results not yet acknowledged by a dispatcher: one file per run,
// <dir>/<run_id>.result holding the serialized RunResult. Put() writes a temp file, fsyncs
// it, renames it into place and fsyncs the directory, so a result that Put() returned OK
// for survives a crash. Thread-compatible per run id; distinct run ids may be used from
// several threads.
class ResultSpool {
 public:
  explicit ResultSpool(std::string dir);

  // Creates the directory. Call once before anything else.
  absl::Status Init();
  absl::Status Put(const jobwheel::v1::RunResult& result);
  // Removes the result of run_id (OK when absent).
  absl::Status Remove(int64_t run_id);
  // Every spooled result. Unreadable files are renamed to *.bad and skipped.
  absl::StatusOr<std::vector<jobwheel::v1::RunResult>> LoadAll();

  const std::string& dir() const { return dir_; }

 private:
  std::string PathFor(int64_t run_id) const;

  const std::string dir_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RESULT_SPOOL_H_
