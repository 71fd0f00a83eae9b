#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_STATE_DIR_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_STATE_DIR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "jobwheel/xxl/gateway_state.pb.h"

namespace jobwheel::xxl {

// The gateway's durable state in --state_dir: one file per identity
// (identities/<sha256 of key>.pb) and per run (runs/<run id>.pb), each written whole to a
// temporary file and renamed, so a crash leaves the old or the new record, never half of one;
// identities always, and runs when asked, are synced before the rename (durable through a
// machine crash, not only a process crash). The directories are 0700 and the files 0600 (identity
// records hold the XXL executors' tokens). An empty `dir` keeps nothing (tests). Thread-safe (no
// shared state but the file system).
class StateDir {
 public:
  explicit StateDir(std::string dir) : dir_(std::move(dir)) {}

  // Creates the directories (0700); INVALID_ARGUMENT naming --state_dir when it cannot.
  absl::Status Open();

  absl::Status SaveIdentity(const IdentityRecord& record);
  absl::StatusOr<std::vector<IdentityRecord>> LoadIdentities() const;
  absl::Status SaveRun(const RunRecord& record, bool sync);
  absl::Status DeleteRun(int64_t run_id);
  // Every run record; a file that does not parse is skipped (and logged).
  absl::StatusOr<std::vector<RunRecord>> LoadRuns() const;

  const std::string& dir() const { return dir_; }

 private:
  absl::Status WriteWhole(const std::string& path, const std::string& bytes, bool sync) const;

  const std::string dir_;
};

// "<app> <url base>": what names an identity.
std::string IdentityKey(absl::string_view app, absl::string_view url_base);
// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(absl::string_view data);

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_STATE_DIR_H_
