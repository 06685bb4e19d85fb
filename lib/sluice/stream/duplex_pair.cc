// duplex_pair(): Node's DuplexSide (lib/internal/streams/duplexpair.js) as a
// source and a sink per side, sharing one state.
#include "sluice/stream/duplex_pair.h"

#include <cassert>
#include <optional>

#include "sluice/base/errors.h"

namespace sluice {

namespace {

struct pair_state {
  duplex* side[2] = {nullptr, nullptr};  // null once that side's C++ object went
  // Node: this[kCallback] of each side: the other side's write callback,
  // held until this side's _read asks for more.
  std::optional<write_done> callback[2];
  // The 'end' listener a side's _final put on the other, while it waits.
  std::optional<listener_id> final_listener[2];
};

class pair_source final : public source {
 public:
  pair_source(std::shared_ptr<pair_state> s, int i) : s_(std::move(s)), i_(i) {}
  ~pair_source() override { s_->side[i_] = nullptr; }

  // Node: DuplexSide._read.
  void read(std::size_t) override {
    if (auto& cb = s_->callback[i_]) {
      const write_done done = *cb;
      cb.reset();
      done();
    }
  }

 private:
  std::shared_ptr<pair_state> s_;
  int i_;
};

class pair_sink final : public sink {
 public:
  pair_sink(std::shared_ptr<pair_state> s, int i) : sink({.final = true}), s_(std::move(s)), i_(i) {}
  ~pair_sink() override {
    // What the other side still holds of this one must not outlive it.
    const int o = 1 - i_;
    s_->callback[o].reset();
    if (s_->final_listener[i_] && s_->side[o]) s_->side[o]->off(event::end, *s_->final_listener[i_]);
    s_->final_listener[i_].reset();
    s_->side[i_] = nullptr;
  }

  void attach(loop& l) override { loop_ = &l; }

  // Node: DuplexSide._write: an empty chunk completes on the next tick;
  // another is pushed into the other side, and completes at its next _read.
  void write(std::string_view chunk, write_done done) override {
    duplex* other = s_->side[1 - i_];
    if (!other) {
      done(make_error_code(errc::destroyed));
      return;
    }
    if (chunk.empty()) {
      loop_->next_tick([done] { done(); });
      return;
    }
    assert(!s_->callback[1 - i_]);
    other->push(chunk);
    s_->callback[1 - i_] = done;
  }

  // Node: DuplexSide._final: the writer finishes when the reader has ended.
  void final(final_done done) override {
    duplex* other = s_->side[1 - i_];
    if (!other) {
      done(make_error_code(errc::destroyed));
      return;
    }
    s_->final_listener[i_] = other->once(event::end, [s = s_, i = i_, done] {
      s->final_listener[i].reset();
      done();
    });
    other->push_eof();
  }

 private:
  std::shared_ptr<pair_state> s_;
  int i_;
  loop* loop_ = nullptr;
};

}  // namespace

std::pair<std::unique_ptr<duplex>, std::unique_ptr<duplex>> duplex_pair(const duplex_options& options) {
  auto s = std::make_shared<pair_state>();
  auto a = std::make_unique<duplex>(std::make_unique<pair_source>(s, 0), std::make_unique<pair_sink>(s, 0), options);
  auto b = std::make_unique<duplex>(std::make_unique<pair_source>(s, 1), std::make_unique<pair_sink>(s, 1), options);
  s->side[0] = a.get();
  s->side[1] = b.get();
  return {std::move(a), std::move(b)};
}

}  // namespace sluice
