// EventIterator: a k-way merge of the stream cursors with a binary min-heap keyed by
// (timestamp, stream index). Each cursor holds one decoded event; memory is O(streams).
#include <algorithm>

#include "hushtrace/reader.h"
#include "reader/stream_decoder.h"

namespace hush::reader {

struct EventIterator::Impl {
  const internal::TraceData* data = nullptr;
  std::vector<std::unique_ptr<internal::StreamCursor>> cursors;
  std::vector<internal::StreamCursor*> heap;
  internal::StreamCursor* current = nullptr;  // its event is the one handed out last
  bool started = false;
  bool failed = false;
  bool skip_damaged = false;
  std::string error;
  std::vector<std::string> skipped;
  std::uint64_t events = 0;
  Event empty;

  // std::*_heap build a max-heap: "a < b" means a comes out after b.
  static bool Later(const internal::StreamCursor* a, const internal::StreamCursor* b) {
    const std::uint64_t ta = a->event().timestamp(), tb = b->event().timestamp();
    if (ta != tb) return ta > tb;
    return a->stream_index() > b->stream_index();
  }

  // Advances `c`; pushes it back on the heap when it has an event.
  bool Refill(internal::StreamCursor* c) {
    switch (c->Advance(&error)) {
      case internal::StreamCursor::State::kEvent:
        heap.push_back(c);
        std::push_heap(heap.begin(), heap.end(), Later);
        return true;
      case internal::StreamCursor::State::kEnd: return true;
      case internal::StreamCursor::State::kError:
        if (skip_damaged) {  // the cursor is not pushed back: its stream ends here
          skipped.push_back(std::move(error));
          error.clear();
          return true;
        }
        failed = true;
        return false;
    }
    return false;
  }
};

EventIterator::EventIterator(const Trace& trace) : impl_(std::make_unique<Impl>()) {
  impl_->data = trace.data_.get();
  for (const auto& src : impl_->data->sources) {
    impl_->cursors.push_back(std::make_unique<internal::StreamCursor>(
        &impl_->data->parsed, impl_->data->classes.get(), src.get()));
  }
  impl_->heap.reserve(impl_->cursors.size());
}

EventIterator::EventIterator(const Trace& trace, std::span<const std::uint32_t> streams)
    : impl_(std::make_unique<Impl>()) {
  impl_->data = trace.data_.get();
  for (const auto& src : impl_->data->sources) {
    if (std::find(streams.begin(), streams.end(), src->index) == streams.end()) continue;
    impl_->cursors.push_back(std::make_unique<internal::StreamCursor>(
        &impl_->data->parsed, impl_->data->classes.get(), src.get()));
  }
  impl_->heap.reserve(impl_->cursors.size());
}

EventIterator::~EventIterator() = default;

bool EventIterator::Next() {
  Impl& m = *impl_;
  if (m.failed) return false;
  if (!m.started) {
    m.started = true;
    for (auto& c : m.cursors) {
      if (!m.Refill(c.get())) return false;
    }
  } else if (m.current != nullptr) {
    internal::StreamCursor* c = m.current;
    m.current = nullptr;
    if (!m.Refill(c)) return false;
  }
  if (m.heap.empty()) return false;
  std::pop_heap(m.heap.begin(), m.heap.end(), Impl::Later);
  m.current = m.heap.back();
  m.heap.pop_back();
  ++m.events;
  return true;
}

const Event& EventIterator::event() const {
  return impl_->current != nullptr ? impl_->current->event() : impl_->empty;
}

const std::string& EventIterator::error() const { return impl_->error; }
void EventIterator::SkipDamagedStreams() { impl_->skip_damaged = true; }
const std::vector<std::string>& EventIterator::skipped() const { return impl_->skipped; }
std::uint64_t EventIterator::events_read() const { return impl_->events; }

}  // namespace hush::reader
