// FoldedWriter: slices -> folded stacks with self time (see folded_writer.h).
#include "export/folded_writer.h"

#include <algorithm>

namespace hush::exporter {

void FoldedWriter::SliceBegin(std::int64_t ns, Track track, Name name, Name, std::span<const Arg>) {
  if (track.kind != TrackKind::kThread) return;
  if (name.id >= names_.size()) names_.resize(name.id + 1);
  std::string& text = names_[name.id];
  if (text.empty()) {
    text.assign(name.text);
    for (char& c : text) {
      if (c == ';')
        c = ':';
      else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        c = ' ';
    }
    if (text.empty()) text = "?";
  }
  stacks_[track.id].push_back(Frame{name.id, ns});
}

void FoldedWriter::SliceEnd(std::int64_t ns, Track track, std::span<const Arg>) {
  if (track.kind != TrackKind::kThread) return;
  std::vector<Frame>& stack = stacks_[track.id];
  if (stack.empty()) return;  // TimelineBuilder pairs every end with a begin
  const Frame f = stack.back();
  const std::int64_t duration = std::max<std::int64_t>(0, ns - f.begin);
  key_.clear();
  for (const Frame& s : stack) key_.push_back(s.name);
  stack.pop_back();
  if (!stack.empty()) stack.back().children += duration;
  const std::int64_t self = duration - std::min(duration, f.children);
  if (self > 0) self_[key_] += self;
}

bool FoldedWriter::Finish() {
  std::string line;
  for (const auto& [key, ns] : self_) {
    line.clear();
    for (std::size_t i = 0; i < key.size(); ++i) {
      if (i != 0) line.push_back(';');
      line += names_[key[i]];
    }
    line += ' ' + std::to_string(ns) + '\n';
    if (std::fwrite(line.data(), 1, line.size(), out_) != line.size()) return false;
  }
  return std::fflush(out_) == 0;
}

}  // namespace hush::exporter
