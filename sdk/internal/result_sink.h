#ifndef JOBWHEEL_SDK_INTERNAL_RESULT_SINK_H_
#define JOBWHEEL_SDK_INTERNAL_RESULT_SINK_H_

#include "jobwheel/v1/dispatcher.pb.h"

namespace jobwheel::sdk {

// Where finished runs go (the ResultReporter; a fake in tests). Submit must make the result
// durable before returning, or at least never drop it.
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void Submit(const jobwheel::v1::RunResult& result) = 0;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RESULT_SINK_H_
