#ifndef JOBWHEEL_SDK_INTERNAL_RUN_LOG_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_LOG_H_

// The run logs are in run_log_writer.h, run_log_reader.h and run_log_store.h; this header is
// kept for the files that still include it.
#include "sdk/internal/run_log_store.h"

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_LOG_H_
