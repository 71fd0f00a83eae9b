#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_JOB_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_JOB_H_

#include <cstdint>
#include <string>
#include <vector>

namespace jobwheel::ctl::xxl {

// One XXL-JOB job definition (a row of xxl_job_info, or one entry of the admin's job list), as
// read from an export: the texts as they were, the numbers parsed. Names follow the
// xxl_job_info columns.
struct XxlJob {
  int64_t id = 0;
  int64_t job_group = 0;
  std::string app_name;  // The group's appname when the export carries it; else empty.
  std::string job_desc;
  std::string author;
  std::string alarm_email;
  std::string schedule_type;  // NONE, CRON, FIX_RATE, FIX_DELAY.
  std::string schedule_conf;
  std::string misfire_strategy;
  std::string executor_route_strategy;
  std::string executor_handler;
  std::string executor_param;
  std::string executor_block_strategy;
  int64_t executor_timeout = 0;  // Seconds; 0 means none.
  int64_t executor_fail_retry_count = 0;
  std::string glue_type;
  std::string glue_source;
  std::string glue_remark;
  std::vector<int64_t> child_job_ids;
  int64_t trigger_status = 0;  // 1 running, 0 stopped.
  std::string job_cron;        // XXL-JOB before 2.3: the cron, and no schedule_type.
  std::string where;           // Where it was read, for messages: "line 3", "data[2]".
};

}  // namespace jobwheel::ctl::xxl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_JOB_H_
