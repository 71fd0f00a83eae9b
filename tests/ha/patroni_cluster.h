#ifndef JOBWHEEL_TESTS_HA_PATRONI_CLUSTER_H_
#define JOBWHEEL_TESTS_HA_PATRONI_CLUSTER_H_

#include <string>

#include "absl/status/status.h"

namespace jobwheel::testing {

// Runs `command` with /bin/sh; returns its output (trailing whitespace removed) and sets
// `exit_code` (-1 when it did not exit normally).
std::string Shell(const std::string& command, int* exit_code);

// The value of `series` (a metric name with its labels, as exposed) in Prometheus text `text`;
// -1 when it is not there.
double MetricValue(const std::string& text, const std::string& series);

// A Patroni cluster of the test, through scripts/lib/patroni.sh (a data dependency): etcd and
// PostgreSQL members under the test's directory. The destructor stops it.
class PatroniCluster {
 public:
  PatroniCluster();
  ~PatroniCluster();
  PatroniCluster(const PatroniCluster&) = delete;
  PatroniCluster& operator=(const PatroniCluster&) = delete;

  // Starts `members` members, "sync" or "async". FAILED_PRECONDITION when Patroni or etcd is
  // not installed (the caller skips), INTERNAL with the script's output on other failures.
  absl::Status Start(int members, const std::string& mode);
  // The script's VERB on this cluster (kill-primary, switchover, wait; start-member with
  // `after` the member's name): its output; `ok` false when it failed.
  std::string Run(const std::string& verb, bool* ok, const std::string& after = "");
  // The multi-host read-write DSN.
  const std::string& dsn() const { return dsn_; }
  // The tail of every member's Patroni log (for failure messages).
  std::string Logs();

 private:
  std::string script_, dir_, dsn_;
  bool started_ = false;
};

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_TESTS_HA_PATRONI_CLUSTER_H_
