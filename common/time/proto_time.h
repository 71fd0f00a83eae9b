#ifndef JOBWHEEL_COMMON_TIME_PROTO_TIME_H_
#define JOBWHEEL_COMMON_TIME_PROTO_TIME_H_

#include <string>

#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace jobwheel {

inline absl::Time FromProto(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

inline google::protobuf::Timestamp ToProto(absl::Time t) {
  google::protobuf::Timestamp ts;
  const int64_t ns = absl::ToUnixNanos(t);
  int64_t secs = ns / 1000000000;
  int64_t nanos = ns % 1000000000;
  if (nanos < 0) {
    nanos += 1000000000;
    --secs;
  }
  ts.set_seconds(secs);
  ts.set_nanos(static_cast<int32_t>(nanos));
  return ts;
}

inline absl::Duration FromProto(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

inline google::protobuf::Duration ToProtoDuration(absl::Duration d) {
  google::protobuf::Duration out;
  const int64_t ns = absl::ToInt64Nanoseconds(d);
  out.set_seconds(ns / 1000000000);
  out.set_nanos(static_cast<int32_t>(ns % 1000000000));
  return out;
}

// PostgreSQL timestamptz literal in UTC with microseconds: "2026-11-22 01:02:03.456789+00".
// Read timestamps back with `(EXTRACT(EPOCH FROM col) * 1000000)::BIGINT` and FromMicros.
inline std::string ToPgTimestamp(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%E6S+00", t, absl::UTCTimeZone());
}

inline absl::Time FromMicros(int64_t micros) { return absl::FromUnixMicros(micros); }

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_TIME_PROTO_TIME_H_
