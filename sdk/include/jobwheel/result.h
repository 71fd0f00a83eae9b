#ifndef JOBWHEEL_SDK_RESULT_H_
#define JOBWHEEL_SDK_RESULT_H_

#include <string>
#include <utility>

namespace jobwheel {

// What a handler returns: success or failure with a code and a message. The codes follow
// XXL-JOB's convention (200 success, 500 failure, 502 timeout) and end up in the run's
// result_code / result_message. A value type; cheap to copy.
class Result {
 public:
  static constexpr int kOkCode = 200;
  static constexpr int kFailCode = 500;
  static constexpr int kTimeoutCode = 502;

  static Result Ok(std::string message = "") { return Result(true, kOkCode, std::move(message)); }
  static Result Fail(int code, std::string message) {
    return Result(false, code, std::move(message));
  }
  static Result Fail(std::string message) { return Fail(kFailCode, std::move(message)); }

  bool ok() const { return ok_; }
  int code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Result(bool ok, int code, std::string message)
      : ok_(ok), code_(code), message_(std::move(message)) {}

  bool ok_;
  int code_;
  std::string message_;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_SDK_RESULT_H_
