#include "services/dispatcher/result_message.h"

namespace jobwheel::dispatcher {

void TruncateResultMessage(std::string* msg, size_t max_bytes) {
  if (msg->size() <= max_bytes) return;
  size_t cut = max_bytes;
  // Never split a UTF-8 sequence: back up over continuation bytes.
  while (cut > 0 && (static_cast<unsigned char>((*msg)[cut]) & 0xC0) == 0x80) --cut;
  msg->resize(cut);
  msg->append(" \xE2\x80\xA6(truncated)");
}

}  // namespace jobwheel::dispatcher
