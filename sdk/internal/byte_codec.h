#ifndef JOBWHEEL_SDK_INTERNAL_BYTE_CODEC_H_
#define JOBWHEEL_SDK_INTERNAL_BYTE_CODEC_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace jobwheel::sdk {

// The on-disk encodings of the executor's files (result spool, run log segments).

// FNV-1a, 32 bits: enough to tell a torn or garbage record.
inline uint32_t Fnv1a(absl::string_view data) {
  uint32_t h = 2166136261u;
  for (unsigned char c : data) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

// The low `bytes` bytes of `v` at `p`, little-endian.
inline void PutLittleEndian(char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

inline uint64_t GetLittleEndian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return v;
}

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_BYTE_CODEC_H_
