#include "sluice/loop/emitter.h"

#include <cstdio>

namespace sluice {
namespace {

void print_unhandled(const std::error_code& ec) noexcept {
  std::fprintf(stderr, "sluice: unhandled 'error' event: %s\n", ec.message().c_str());
}

unhandled_error_handler unhandled = &print_unhandled;

constexpr std::string_view names[event_count] = {
    "drain", "finish", "error", "close", "prefinish", "pipe",
    "unpipe", "end", "data", "readable", "pause", "resume",
    "connect", "ready", "timeout", "listening", "connection",
    "lookup",
    "secureConnect", "secure", "secureConnection", "tlsClientError",
};
static_assert(names[event_count - 1] == "tlsClientError", "one name per event, in the enum's order");

}  // namespace

std::string_view to_string(event ev) noexcept { return names[static_cast<int>(ev)]; }

unhandled_error_handler set_unhandled_error_handler(unhandled_error_handler h) noexcept {
  auto old = unhandled;
  unhandled = h ? h : &print_unhandled;
  return old;
}

listener_id emitter::add(event ev, listener fn, bool once) {
  // first_ holds the oldest listener; it may only be refilled while rest_ is
  // empty, or it would overtake listeners added before it.
  entry* e;
  if (!first_.used && (!rest_ || rest_->empty())) {
    e = &first_;
  } else {
    if (!rest_) rest_ = std::make_unique<entry_list>();
    e = &rest_->emplace_back();
  }
  e->fn = std::move(fn);
  e->id = next_id_++;
  e->added_gen = gen_;
  e->removed_gen = 0;
  e->ev = ev;
  e->once = once;
  e->used = true;
  recompute_masks();
  return e->id;
}

listener_id emitter::add_front(event ev, listener fn) {
  if (!front_) front_ = std::make_unique<entry_list>();
  entry& e = front_->emplace_back();
  e.fn = std::move(fn);
  e.id = next_id_++;
  e.added_gen = gen_;
  e.removed_gen = 0;
  e.ev = ev;
  e.once = false;
  e.used = true;
  recompute_masks();
  return e.id;
}

bool emitter::visible(const entry& e, event ev, std::uint32_t gen) const noexcept {
  return e.used && e.ev == ev && e.added_gen < gen && (e.removed_gen == 0 || gen <= e.removed_gen);
}

void emitter::remove(entry& e) noexcept {
  if (depth_ == 0) {
    e.fn = nullptr;
    e.used = false;
    dirty_ = true;  // compact() drops it from rest_ and refills first_
  } else {
    // The entry may be running right now: keep it until the outermost emit ends.
    e.removed_gen = gen_;
    dirty_ = true;
  }
  recompute_masks();
}

bool emitter::off(event ev, listener_id id) noexcept {
  auto match = [&](entry& e) { return e.used && e.ev == ev && e.id == id && e.removed_gen == 0; };
  entry* found = nullptr;
  if (front_) {
    for (std::size_t i = 0; i < front_->size() && !found; ++i)
      if (match((*front_)[i])) found = &(*front_)[i];
  }
  if (!found && match(first_)) found = &first_;
  if (!found && rest_) {
    for (std::size_t i = 0; i < rest_->size() && !found; ++i)
      if (match((*rest_)[i])) found = &(*rest_)[i];
  }
  if (found) {
    remove(*found);
    if (depth_ == 0) compact();
  }
  listener_removed(ev);
  return found != nullptr;
}

void emitter::remove_all_listeners(event ev) noexcept {
  auto drop = [&](entry& e) {
    if (e.used && e.ev == ev && e.removed_gen == 0) remove(e);
  };
  if (front_)
    front_->for_each(drop);
  drop(first_);
  if (rest_)
    rest_->for_each(drop);
  if (depth_ == 0) compact();
  all_listeners_removed(ev);
}

std::size_t emitter::listener_count(event ev) const noexcept {
  std::size_t n = 0;
  auto count = [&](const entry& e) { n += e.used && e.ev == ev && e.removed_gen == 0; };
  if (front_)
    front_->for_each(count);
  count(first_);
  if (rest_)
    rest_->for_each(count);
  return n;
}

bool emitter::emit_none(event ev, const event_arg& arg) noexcept {
  if (ev == event::error) unhandled(arg.error);
  return false;
}

bool emitter::emit_slow(event ev, const event_arg& arg) noexcept {
  const std::uint32_t gen = ++gen_;
  ++depth_;
  // Entries appended during this emit land past `n`, and entries never move,
  // so the references taken here stay valid while listeners add more.
  const std::size_t n = rest_ ? rest_->size() : 0;
  auto call = [&](entry& e) {
    if (!visible(e, ev, gen)) return;
    if (e.once && e.removed_gen == 0) {
      remove(e);  // Node removes a once-listener before calling it
      listener_removed(ev);
    }
    e.fn(arg);
  };
  // Prepended listeners first, newest first. Those prepended during this
  // emit land past `m` and are not visible to it anyway.
  if (front_) {
    const std::size_t m = front_->size();
    for (std::size_t i = m; i-- > 0;) call((*front_)[i]);
  }
  call(first_);
  for (std::size_t i = 0; i < n; ++i) call((*rest_)[i]);
  if (--depth_ == 0 && dirty_) compact();
  return true;
}

void emitter::compact() noexcept {
  dirty_ = false;
  auto dead = [](const entry& e) { return !e.used || e.removed_gen != 0; };
  if (first_.used && dead(first_)) {
    first_.fn = nullptr;
    first_.used = false;
  }
  if (rest_) rest_->erase_if(dead);
  if (front_) front_->erase_if(dead);
  if (!first_.used && rest_ && !rest_->empty()) {
    first_ = std::move(rest_->front());
    rest_->pop_front();
  }
  recompute_masks();
}

void emitter::recompute_masks() noexcept {
  live_ = 0;
  slow_ = 0;
  auto mark = [&](const entry& e, bool inline_slot) {
    if (!e.used) return;
    const std::uint32_t bit = 1u << static_cast<unsigned>(e.ev);
    if (e.removed_gen != 0) {
      slow_ |= bit;  // a tombstone may still be owed a call by an emit in progress
      return;
    }
    if ((live_ & bit) || !inline_slot || e.once) slow_ |= bit;
    live_ |= bit;
  };
  if (front_)
    front_->for_each([&](const entry& e) { mark(e, false); });
  mark(first_, true);
  if (rest_)
    rest_->for_each([&](const entry& e) { mark(e, false); });
}

}  // namespace sluice

