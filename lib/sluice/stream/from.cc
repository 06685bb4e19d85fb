// Readable.from(): the source that pulls a from_next, in the order of Node
// v20's nextSyncWithSyncValues() (lib/internal/streams/from.js).
#include "sluice/stream/from.h"

#include "sluice/errors.h"
#include "sluice/stream/default_high_water_mark.h"

namespace sluice {

namespace {

class from_source final : public source {
 public:
  explicit from_source(from_next next) : next_(std::move(next)) {}

  // Node: readable._read, then nextSyncWithSyncValues(): pull while push()
  // says there is room. `reading_` protects against a _read that comes in
  // (through a listener of a pushed item) before this pull is done.
  void read(std::size_t) override {
    if (reading_) return;
    reading_ = true;
    for (;;) {
      std::string item;
      std::error_code ec;
      bool got = false;
      try {
        got = next_(item, ec);
      } catch (const std::system_error& e) {
        ec = e.code();
      } catch (const std::exception& e) {
        ec = user_error(e.what());
      }
      if (ec) {
        // Node: readable.destroy(err) in the catch; `reading` stays set.
        report_error(ec);
        return;
      }
      if (!got) {
        push_eof();
        return;
      }
      if (stream().push(std::move(item))) continue;
      reading_ = false;
      return;
    }
  }

 private:
  from_next next_;
  bool reading_ = false;
};

// Node: Readable.from(string): read() pushes the string and the end.
class one_chunk_source final : public source {
 public:
  explicit one_chunk_source(std::string s) : s_(std::move(s)) {}
  void read(std::size_t) override {
    stream().push(std::move(s_));
    push_eof();
  }

 private:
  std::string s_;
};

readable_options stream_options(const from_options& o, std::size_t default_hwm) {
  readable_options r;
  r.high_water_mark = o.high_water_mark.value_or(default_hwm);
  r.object_mode = o.object_mode;
  r.auto_destroy = o.auto_destroy;
  r.emit_close = o.emit_close;
  r.event_loop = o.event_loop;
  return r;
}

}  // namespace

std::unique_ptr<readable> readable_from_next(from_next next, const from_options& options) {
  if (!next) throw stream_error(make_error_code(errc::invalid_arg_type), "readable_from needs an iterable");
  return std::make_unique<readable>(std::make_unique<from_source>(std::move(next)), stream_options(options, 1));
}

std::unique_ptr<readable> readable_from(std::string_view s, const from_options& options) {
  return std::make_unique<readable>(std::make_unique<one_chunk_source>(std::string(s)),
                                    stream_options(options, get_default_high_water_mark(options.object_mode)));
}

}  // namespace sluice
