// FilterExpr (filter_expr.h): the reader's Source for filter::Run.
#include "filter_expr.h"

namespace hush::cli {
namespace {

using reader::FieldType;

class EventSource {
 public:
  explicit EventSource(const reader::Event& event) : e_(event) {}

  long double Number(std::uint32_t field) const {
    const reader::FieldValue v = e_.field(field);
    if (v.type() == FieldType::kFloat) return v.AsDouble();
    // Integers, bools and enums: exact in a long double.
    if (v.info().is_signed) return static_cast<long double>(v.AsInt64());
    return static_cast<long double>(v.AsUint64());
  }
  bool String(const filter::StrRef& ref, std::string_view* out) const {
    switch (ref.kind) {
      case filter::StrRef::Kind::kField: *out = e_.field(ref.index).AsString(); return true;
      case filter::StrRef::Kind::kLabel: {
        const reader::FieldValue v = e_.field(ref.index);
        *out = v.info().LabelFor(v.AsInt64());
        return true;
      }
      case filter::StrRef::Kind::kThread: *out = e_.thread_name(); return true;
      default: return false;
    }
  }
  long double Tid() const { return e_.tid(); }

 private:
  const reader::Event& e_;
};

filter::FieldClass ClassOf(FieldType type) {
  switch (type) {
    case FieldType::kBool:
    case FieldType::kEnum: return filter::FieldClass::kLabelled;
    case FieldType::kString: return filter::FieldClass::kString;
    case FieldType::kBytes: return filter::FieldClass::kBytes;
    default: return filter::FieldClass::kNumber;
  }
}

}  // namespace

std::unique_ptr<FilterExpr> FilterExpr::Parse(const std::string& text, filter::Error* error) {
  std::unique_ptr<filter::Parsed> parsed = filter::Parse(text, error);
  if (!parsed) return nullptr;
  return std::make_unique<FilterExpr>(std::move(parsed));
}

const filter::Code& FilterExpr::CodeFor(const reader::EventClass& event_class) {
  if (bound_.size() <= event_class.index) bound_.resize(event_class.index + 1);
  Bound& b = bound_[event_class.index];
  if (b.event_class != &event_class) {
    filter::Layout layout;
    layout.event_name = event_class.name;
    layout.strict = false;
    layout.thread_values = true;
    for (const reader::FieldInfo& f : event_class.fields) layout.fields.push_back({f.name, ClassOf(f.type)});
    filter::Error never;  // the lenient binding does not fail
    filter::Bind(*parsed_, layout, &b.code, &never);
    b.event_class = &event_class;
  }
  return b.code;
}

bool FilterExpr::Matches(const reader::Event& event) {
  return filter::Run(CodeFor(event.event_class()), EventSource(event));
}

}  // namespace hush::cli
