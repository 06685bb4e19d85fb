// write_req: one pending chunk, its callback and the hook that links it into
// a write_queue. Requests are pooled per stream and recycled.
#pragma once

#include <boost/intrusive/slist_hook.hpp>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>
#include <vector>

#include "sluice/function.h"
#include "sluice/queue/byte_arena.h"

namespace sluice {

/// A write's or end's callback: called once, with no error when the chunk has
/// reached the sink, or with the reason it never will.
using write_cb = inline_function<void(std::error_code), 16>;

namespace detail {

struct write_req {
  boost::intrusive::slist_member_hook<> hook;
  std::string_view data;  // the bytes, in the arena or in `owned`
  write_cb cb;
  byte_arena::block* block = nullptr;  // arena block to release, if the bytes are there
  // Large chunks are taken by ownership, so they are never copied twice.
  std::variant<std::monostate, std::string, std::vector<std::byte>, std::shared_ptr<const void>> owned;
};

}  // namespace detail
}  // namespace sluice
