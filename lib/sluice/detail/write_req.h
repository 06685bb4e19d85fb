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

namespace sluice {

/// A write's or end's callback: called once, with no error when the chunk has
/// reached the sink, or with the reason it never will.
using write_cb = inline_function<void(std::error_code), 16>;

namespace detail {

/// A large chunk taken by ownership, so that it is never copied twice.
struct owned_chunk {
  std::variant<std::string, std::vector<std::byte>, std::shared_ptr<const void>> buffer;
};

/// One cache line: the write path touches every request three times (write,
/// writev, callback), so their size is most of its memory traffic.
struct alignas(64) write_req {
  boost::intrusive::slist_member_hook<> hook;
  union {
    owned_chunk* owned = nullptr;  // while the request is in use
    write_req* next_free;          // while it waits in its req_pool
  };
  std::string_view data;  // the bytes: in the stream's arena unless `owned` holds them
  write_cb cb;            // 16-byte aligned: placed last so nothing pads the line
};
static_assert(sizeof(write_req) == 64, "a write_req is one cache line");

}  // namespace detail
}  // namespace sluice
