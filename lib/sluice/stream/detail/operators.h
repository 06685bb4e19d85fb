// What the two halves of the iterator helpers share (operators.cc, and
// operators_map.cc, Node's map() machinery). Not installed.
#pragma once

#include <string>
#include <system_error>

#include "sluice/base/function.h"

namespace sluice::detail {

/// The error of a helper's function that threw, called inside a catch: a
/// std::system_error's code, another std::exception's what() as a
/// user_error().
std::error_code thrown();

/// Node: `for await (const chunk of r) { if (!body(chunk)) break; }`, then
/// done(error). `body` returns false to leave the loop (break), which
/// destroys `r`; a throw from it leaves with its error.
using body_fn = inline_function<bool(std::string&& item), 32>;

}  // namespace sluice::detail
