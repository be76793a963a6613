// `hushtrace dump --filter EXPR`: the read-side back end of the filter language
// (src/filter/filter.h, docs/cli.md "Filters"): the syntax tree filter::Parse() made, bound per
// event class by the binder every filter shares (src/filter/bind.h) and run on reader::Event.
//
// The binding is the lenient one (filter::Layout::strict false): any event of the trace comes by,
// so a comparison involving a field the event does not have, or a field of a type that does not
// compare with its other side, is false (`!(x == 1)` holds for events without x). $tid and
// $thread are the event's thread id and thread name; $name its "provider:name".
#ifndef HUSHTRACE_TOOLS_HUSHTRACE_FILTER_EXPR_H_
#define HUSHTRACE_TOOLS_HUSHTRACE_FILTER_EXPR_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filter/bind.h"
#include "filter/filter.h"
#include "hushtrace/reader.h"

namespace hush::cli {

class FilterExpr {
 public:
  // The parsed text (filter::Parse; nullptr and *error on a syntax error).
  static std::unique_ptr<FilterExpr> Parse(const std::string& text, filter::Error* error);
  explicit FilterExpr(std::unique_ptr<filter::Parsed> parsed) : parsed_(std::move(parsed)) {}

  // Whether `event` satisfies the filter. Binds the filter once per event class (the binding is
  // kept until the filter is destroyed; the events may come from any one trace at a time).
  bool Matches(const reader::Event& event);

 private:
  struct Bound {
    const reader::EventClass* event_class = nullptr;
    filter::Code code;
  };
  const filter::Code& CodeFor(const reader::EventClass& event_class);

  std::unique_ptr<filter::Parsed> parsed_;
  std::vector<Bound> bound_;  // by EventClass::index
};

}  // namespace hush::cli

#endif  // HUSHTRACE_TOOLS_HUSHTRACE_FILTER_EXPR_H_
