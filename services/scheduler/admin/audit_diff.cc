#include "services/scheduler/admin/audit_diff.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"

namespace jobwheel::scheduler::admin {
namespace {

using google::protobuf::FieldDescriptor;
using jobwheel::v1::Job;

// Fields the system sets; a write's change of them is not the caller's.
const absl::flat_hash_set<std::string>& SystemFields() {
  static const auto* const fields = new absl::flat_hash_set<std::string>{
      "id", "next_fire_time", "create_time", "update_time", "script_version", "schedule_error"};
  return *fields;
}

// `only_set`: a field at its default value (proto3: unset) is "".
std::string ValueText(const Job& job, const FieldDescriptor* f, bool only_set) {
  if (f->name() == "script_source") {
    if (job.script_source().empty()) return "";
    return absl::StrCat("(", job.script_source().size(), " bytes, version ", job.script_version(),
                        ")");
  }
  const google::protobuf::Reflection* r = job.GetReflection();
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  std::string out;
  if (f->is_repeated()) {
    std::vector<std::string> values(r->FieldSize(job, f));
    for (size_t i = 0; i < values.size(); ++i) {
      printer.PrintFieldValueToString(job, f, static_cast<int>(i), &values[i]);
      while (!values[i].empty() && values[i].back() == ' ') values[i].pop_back();
    }
    // A map's entries come in no particular order.
    if (f->is_map()) std::sort(values.begin(), values.end());
    return absl::StrJoin(values, ", ");
  }
  const bool message = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
  if ((message || only_set) && !r->HasField(job, f)) return "";
  printer.PrintFieldValueToString(job, f, -1, &out);
  // Single-line mode leaves a trailing space after a message's last field.
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

std::vector<jobwheel::v1::AuditFieldChange> DiffJobs(const Job* before, const Job* after) {
  std::vector<jobwheel::v1::AuditFieldChange> changes;
  const google::protobuf::Descriptor* d = Job::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (SystemFields().contains(f->name())) continue;
    // A new or removed job lists the fields it has; an update shows both values in full.
    const bool one_side = before == nullptr || after == nullptr;
    std::string old_text = before != nullptr ? ValueText(*before, f, one_side) : "";
    std::string new_text = after != nullptr ? ValueText(*after, f, one_side) : "";
    // script_source: the same text, maybe another summary; compare the sources themselves.
    if (f->name() == "script_source" && before != nullptr && after != nullptr &&
        before->script_source() == after->script_source()) {
      continue;
    }
    if (old_text == new_text) continue;
    jobwheel::v1::AuditFieldChange c;
    c.set_field(f->name());
    c.set_before(std::move(old_text));
    c.set_after(std::move(new_text));
    changes.push_back(std::move(c));
  }
  return changes;
}

}  // namespace jobwheel::scheduler::admin
