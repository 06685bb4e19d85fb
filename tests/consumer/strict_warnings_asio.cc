// A consumer's file for the asio/ headers (not in sluice.h): each of them,
// with no Boost.Asio flag, under the strict flags of strict_warnings.sh and
// under g++ and clang++ alike (issue 35: clang++ 14 with Boost 1.74 needed
// -DBOOST_ASIO_HAS_CO_AWAIT -DBOOST_ASIO_HAS_STD_COROUTINE, and <utility>
// before awaitable.hpp). readable_from is instantiated with a coroutine, so
// that the coroutine machinery is compiled, not only declared.
#include "sluice/asio/from_awaitable.h"
#include "sluice/asio/attach.h"
#include "sluice/asio/chunks.h"
#include "sluice/asio/completion.h"
#include "sluice/asio/event_queue.h"
#include "sluice/asio/writer.h"

#include <boost/asio/io_context.hpp>
#include <optional>
#include <string>

int main() {
  boost::asio::io_context ctx;
  int n = 0;
  auto r = sluice::asio::readable_from(ctx.get_executor(),
                                       [&n]() -> boost::asio::awaitable<std::optional<std::string>> {
                                         if (n == 1) co_return std::nullopt;
                                         ++n;
                                         co_return std::string("x");
                                       });
  return r ? 0 : 1;
}
