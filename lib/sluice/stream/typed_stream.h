#pragma once

// A stream that knows its sink's (or source's) type: the one pattern for a
// destination with controls of its own (a log file's reopen(), a spool's
// counters, a RELP session's state). The component that owns the sink
// derives its handle from typed_writable<its_sink> and adds the controls;
// nobody casts writable::get_sink() back to a type.
//
// The sink's address is taken before the unique_ptr is handed to the
// writable, so no cast is needed to get it back: the stream owns the sink
// for as long as the handle lives.

#include <memory>

#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"

namespace sluice {

template <class Sink>
class typed_writable : public writable {
 public:
  explicit typed_writable(std::unique_ptr<Sink> s, const writable_options& options = {})
      : typed_writable(s.release(), options) {}

  /// The sink, by its type (hides writable::get_sink(), which gives `sink&`).
  Sink& get_sink() const noexcept { return *sink_; }

 private:
  typed_writable(Sink* s, const writable_options& options)
      : writable(std::unique_ptr<sink>(s), options), sink_(s) {}

  Sink* sink_;  // owned by the stream, as its sink
};

template <class Source>
class typed_readable : public readable {
 public:
  explicit typed_readable(std::unique_ptr<Source> s, const readable_options& options = {})
      : typed_readable(s.release(), options) {}

  /// The source, by its type (hides readable::get_source(), which gives `source&`).
  Source& get_source() const noexcept { return *source_; }

 private:
  typed_readable(Source* s, const readable_options& options)
      : readable(std::unique_ptr<source>(s), options), source_(s) {}

  Source* source_;  // owned by the stream, as its source
};

}  // namespace sluice
