// write_ledger: the chunks a test wrote, and what each callback heard and
// how often, for checking that exactly the chunks that heard success landed.
#pragma once

#include <string>
#include <system_error>
#include <vector>

#include "sluice/queue/write_req.h"

namespace sluice::test {

struct write_ledger {
  std::vector<std::string> lines;
  std::vector<int> calls;
  std::vector<std::error_code> errors;

  /// The callback for a write of `chunk`; the ledger must outlive it.
  write_cb cb(std::string chunk) {
    const std::size_t i = lines.size();
    lines.push_back(std::move(chunk));
    calls.push_back(0);
    errors.emplace_back();
    return [this, i](std::error_code ec) {
      ++calls[i];
      errors[i] = ec;
    };
  }
};

}  // namespace sluice::test
